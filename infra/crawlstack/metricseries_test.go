package crawlstack

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// maxSeries is the most custom metric series a stack may pay for (issue 43).
const maxSeries = 8

// dashboardBody is a dashboard's body as the template holds it, with each token CDK left in it
// (a queue's name, the region) replaced by a placeholder.
func dashboardBody(t *testing.T, template map[string]any) string {
	t.Helper()
	for _, r := range resourcesOf(template) {
		if r["Type"] != "AWS::CloudWatch::Dashboard" {
			continue
		}
		body := r["Properties"].(map[string]any)["DashboardBody"]
		if s, ok := body.(string); ok {
			return s
		}
		join := body.(map[string]any)["Fn::Join"].([]any)
		var b strings.Builder
		for _, part := range join[1].([]any) {
			if s, ok := part.(string); ok {
				b.WriteString(s)
			} else {
				b.WriteString("TOKEN")
			}
		}
		return b.String()
	}
	return ""
}

// crawlSeries returns the series of MetricsNamespace that a template's alarms and dashboard read,
// as "name{dim=value,...}", and fails on a search expression over the namespace (it would chart
// whatever series exist, however many).
func crawlSeries(t *testing.T, template map[string]any) []string {
	t.Helper()
	set := map[string]bool{}
	for id, r := range resourcesOf(template) {
		if r["Type"] != "AWS::CloudWatch::Alarm" {
			continue
		}
		p := r["Properties"].(map[string]any)
		add := func(ns, name, dims any) {
			if ns != MetricsNamespace {
				return
			}
			var ds []string
			list, _ := dims.([]any)
			for _, d := range list {
				m := d.(map[string]any)
				v, _ := json.Marshal(m["Value"])
				ds = append(ds, m["Name"].(string)+"="+string(v))
			}
			slices.Sort(ds)
			set[name.(string)+"{"+strings.Join(ds, ",")+"}"] = true
		}
		if ms, ok := p["Metrics"].([]any); ok {
			for _, m := range ms {
				m := m.(map[string]any)
				if e, _ := m["Expression"].(string); strings.Contains(e, MetricsNamespace) {
					t.Errorf("alarm %s searches %s: %s", id, MetricsNamespace, e)
				}
				if st, ok := m["MetricStat"].(map[string]any); ok {
					mm := st["Metric"].(map[string]any)
					add(mm["Namespace"], mm["MetricName"], mm["Dimensions"])
				}
			}
		} else {
			add(p["Namespace"], p["MetricName"], p["Dimensions"])
		}
	}
	if body := dashboardBody(t, template); body != "" {
		var d struct {
			Widgets []struct {
				Properties struct{ Metrics [][]any }
			}
		}
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatalf("dashboard body: %v", err)
		}
		for _, w := range d.Widgets {
			ns := ""
			for _, m := range w.Properties.Metrics {
				if len(m) == 0 {
					continue
				}
				if opts, ok := m[len(m)-1].(map[string]any); ok {
					if e, _ := opts["expression"].(string); strings.Contains(e, MetricsNamespace) {
						t.Errorf("the dashboard searches %s: %s", MetricsNamespace, e)
					}
				}
				first, _ := m[0].(string)
				if first != "." {
					ns = first
				}
				if ns != MetricsNamespace || len(m) < 2 {
					continue
				}
				var ds []string
				for i := 2; i+1 < len(m); i += 2 {
					k, ok1 := m[i].(string)
					v, ok2 := m[i+1].(string)
					if !ok1 || !ok2 {
						break
					}
					ds = append(ds, k+"="+`"`+v+`"`)
				}
				slices.Sort(ds)
				set[m[1].(string)+"{"+strings.Join(ds, ",")+"}"] = true
			}
		}
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestAtMostEightCustomSeries: the alarms and the dashboard, with every option on (the test
// context has the dashboard, the budget, the extra alarms and the drain checks), read at most
// eight series of the crawl's namespace (five since issue 43 cut three), each one the functions
// write (testdata/metric-series.json, which the root module's metrics test holds against the
// code) and each one they write: no dimension, no search.
func TestAtMostEightCustomSeries(t *testing.T) {
	b, err := os.ReadFile("testdata/metric-series.json")
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if len(written) > maxSeries {
		t.Errorf("the functions write %d series (%v), want at most %d", len(written), written, maxSeries)
	}
	got := crawlSeries(t, tmplJSON)
	if len(got) == 0 || len(got) > maxSeries {
		t.Errorf("the template reads %d series of %s (%v), want 1 to %d", len(got), MetricsNamespace, got, maxSeries)
	}
	for _, s := range got {
		if !slices.Contains(written, strings.TrimSuffix(s, "{}")) {
			t.Errorf("the template reads %s, which the functions do not write (they write %v, with no dimension)", s, written)
		}
	}
	// And nothing is written that nothing reads: a series is billed whether or not it is charted.
	for _, w := range written {
		if !slices.Contains(got, w+"{}") {
			t.Errorf("the functions write %s, which no alarm or dashboard widget reads (it reads %v)", w, got)
		}
	}
}
