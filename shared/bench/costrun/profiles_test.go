package costrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/cost"
	"github.com/crawlstack/crawlstack/shared/demo/realweb"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// TestJSONHoldsThePrintedTotals prints two reports and writes them as JSON, then reads the JSON
// back with encoding/json into a struct of its own and the printed tables with a regular
// expression: each crawl's total per million pages is the same in both, and its items in the
// JSON add up to it.
func TestJSONHoldsThePrintedTotals(t *testing.T) {
	p := cost.DefaultPrices()
	reports := []Report{
		{Name: "realistic", Pages: 4000, Hosts: 1000, Elapsed: 9 * time.Minute, Units: cost.Units{SQSRequests: 9000,
			DynamoDBWriteUnits: 12000, DynamoDBReadUnits: 900, S3ClassA: 300, S3ClassB: 700, LambdaRequests: 500,
			LambdaGBSeconds: 400, LogBytes: 3 << 20, MetricSeriesHours: cost.MetricSeriesHours(8, 9*time.Minute)}, Pollers: AWSPollers},
		{Name: "wide", Pages: 10000, Hosts: 100, Units: cost.Units{SQSRequests: 5000, DynamoDBWriteUnits: 23000,
			S3ClassA: 500, S3ClassB: 600, LambdaRequests: 400, LambdaGBSeconds: 250}},
	}
	var printed, js bytes.Buffer
	for _, r := range reports {
		r.Print(&printed, p)
		r.PrintProfile(&printed)
	}
	if err := WriteJSON(&js, reports, p); err != nil {
		t.Fatal(err)
	}
	totals := regexp.MustCompile(`(?m)^ *total +([0-9.]+) *$`).FindAllStringSubmatch(printed.String(), -1)
	var got []struct {
		Name  string             `json:"name"`
		Pages int                `json:"pages"`
		USD   map[string]float64 `json:"usdPerMillionPages"`
		Per   map[string]float64 `json:"unitsPerPage"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatalf("the JSON does not decode: %v\n%s", err, js.String())
	}
	if len(got) != 2 || len(totals) != 2 {
		t.Fatalf("%d reports in the JSON and %d totals printed, want 2 and 2:\n%s", len(got), len(totals), printed.String())
	}
	for i, g := range got {
		if g.Name != reports[i].Name || g.Pages != reports[i].Pages {
			t.Errorf("report %d is %q of %d pages, want %q of %d", i, g.Name, g.Pages, reports[i].Name, reports[i].Pages)
		}
		want, _ := strconv.ParseFloat(totals[i][1], 64)
		if math.Abs(g.USD["Total"]-want) > 0.005 {
			t.Errorf("%s: JSON total %.4f, printed %s", g.Name, g.USD["Total"], totals[i][1])
		}
		var sum float64
		for k, v := range g.USD {
			if k != "Total" {
				sum += v
			}
		}
		if len(g.USD) < 6 || math.Abs(sum-g.USD["Total"]) > 1e-9 {
			t.Errorf("%s: the items %v add up to %.6f, not the total", g.Name, g.USD, sum)
		}
		// The metric series' line: 8 series x 9 minutes, $0.30 / 730 a series-hour, per million pages.
		if w := p.Cost(reports[i].Units).Metrics / float64(reports[i].Pages) * 1e6; math.Abs(g.USD["Metrics"]-w) > 1e-9 || (i == 0 && w <= 0) {
			t.Errorf("%s: $%v of metrics per million pages in the JSON, want $%v", g.Name, g.USD["Metrics"], w)
		}
		if w := float64(reports[i].Units.SQSRequests) / float64(reports[i].Pages); g.Per["SQSRequests"] != w {
			t.Errorf("%s: %v SQS requests a page in the JSON, want %v", g.Name, g.Per["SQSRequests"], w)
		}
	}
	if !strings.Contains(printed.String(), "AWS runs 5 an event source mapping") {
		t.Errorf("the realistic report does not state the pollers:\n%s", printed.String())
	}
}

// TestParseProfiles takes the profiles in a fixed order, each once, and refuses unknown ones.
func TestParseProfiles(t *testing.T) {
	got, err := ParseProfiles("single, realistic,single")
	if err != nil || strings.Join(got, ",") != "realistic,single" {
		t.Errorf("ParseProfiles = %v, %v; want realistic,single", got, err)
	}
	for _, bad := range []string{"", "wide,fast", " , "} {
		if _, err := ParseProfiles(bad); err == nil {
			t.Errorf("ParseProfiles(%q): no error", bad)
		}
	}
}

// TestRunURLsFlagIsBounded: -run-urls takes 0 to 60, as CRAWL_RUN_URLS does; outside that the
// command says so, naming the flag, before it looks for an endpoint or crawls anything.
func TestRunURLsFlagIsBounded(t *testing.T) {
	for _, bad := range []string{"-1", "61"} {
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), []string{"-run-urls", bad}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--run-urls "+bad) {
			t.Errorf("-run-urls %s: exit %d, stderr %q; want 2 and the flag named", bad, code, errOut.String())
		}
	}
}

// TestRealisticTurnsTheDrainChecksOn: the realistic profile runs the stack's drain checks (one a
// minute), on a table with history, its web realweb's.
func TestRealisticTurnsTheDrainChecksOn(t *testing.T) {
	o := Realistic(pipeline.DefaultConfig(), realweb.Defaults(), 100_000, 2*time.Minute)
	if o.Pipeline.FinishEvery != time.Minute || o.Pipeline.FinishQuiet != 3*time.Minute || o.HistoryItems != 100_000 ||
		o.Real == nil || o.Real.Hosts < 1000 || o.Pollers != 5 {
		t.Errorf("realistic options: %+v", o)
	}
	if err := o.Pipeline.Validate(); err != nil {
		t.Errorf("the realistic pipeline's configuration: %v", err)
	}
}

// TestIntegrationRealisticProfileEndsByItsDrainChecks crawls a small realweb on the emulators with
// the realistic profile's settings (drain checks every 2 s here): every page but the slow host's
// is fetched once, the slow host's times out, no host outside the web is reached (Run would fail),
// and the crawl's end is announced once, drained, by its drain checks. With runs, as the stack
// crawls (its hosts polite enough for runs here at 20 requests a second), the small hosts' lone
// URLs go in messages of several hosts through the slow lane (frontier/groups.go), the big hosts'
// in runs: each page still once.
func TestIntegrationRealisticProfileEndsByItsDrainChecks(t *testing.T) {
	cfg := awstest.Config(t)
	for _, s := range []string{"SQS", "DYNAMODB", "S3"} {
		awstest.RequireService(t, s)
	}
	for _, runs := range []bool{false, true} {
		t.Run(fmt.Sprint("runs=", runs), func(t *testing.T) {
			pc := pipeline.DefaultConfig()
			pc.AllowNets = []string{"127.0.0.0/8"}
			// A fetch timeout of 3 s, and the slow host 3 times slower: under the race detector beside
			// other packages' crawls a page of a few milliseconds has been seen to take over 1 s, time
			// out and be asked again.
			pc.HostRPS, pc.FetchTimeout, pc.RetryWait = 0, 3*time.Second, 100*time.Millisecond
			if runs {
				pc.HostRPS, pc.RunMinInterval, pc.RunURLs = 20, time.Millisecond, 6
			}
			pc.WARCIndex = pipeline.IndexPerCrawl
			web := realweb.Defaults()
			web.Hosts, web.Pages, web.SlowHosts, web.Slow = 20, 60, 1, 9*time.Second
			web.Median, web.P99, web.MaxLatency = time.Millisecond, 5*time.Millisecond, 10*time.Millisecond
			o := Realistic(pc, web, 0, 30*time.Second)
			o.Pipeline.FinishEvery, o.Pipeline.FinishQuiet, o.Visibility = 2*time.Second, 5*time.Second, 30*time.Second
			var debug bytes.Buffer
			o.Log = &debug
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			r, err := Run(ctx, o, cfg)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, n := range realweb.Sizes(web) {
				total += n
			}
			if r.Pages != total-1 || r.Twice != 0 || r.Hosts != 20 {
				t.Errorf("%d pages fetched (%d twice) on %d hosts, want %d (all but the slow host's one page) once on 20", r.Pages, r.Twice, r.Hosts, total-1)
			}
			if r.URLs.Classes["timeout"] != 1 {
				t.Errorf("URL classes %v: want the slow host's page timed out", r.URLs.Classes)
			}
			if len(r.Ends) != 1 || r.Ends[0].End != "drained" || r.Ends[0].Counts.Fetched != int64(total-1) {
				t.Errorf("ends announced: %+v, want one, drained, with %d pages fetched", r.Ends, total-1)
			}
			if r.Units.LambdaRequests == 0 || r.Units.DynamoDBWriteUnits == 0 || r.Units.S3ClassA == 0 {
				t.Errorf("units = %+v: want the crawl metered", r.Units)
			}
			// The slow lane ran, or not, as runs say (its invocation lines name it).
			if lane := bytes.Contains(debug.Bytes(), []byte(`"fn":"fetchslow"`)); lane != runs {
				t.Errorf("the slow lane ran: %v, want %v", lane, runs)
			}
			if runs && r.LoneMessages == 0 {
				t.Errorf("no slow-lane message held lone URLs of several hosts")
			}
		})
	}
}
