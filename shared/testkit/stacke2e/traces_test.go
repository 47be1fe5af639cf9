package stacke2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/observe/metrics"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// envTracingTemplate names the template synthesized with the stack's options on (the Makefile's
// LAMBDA_TRACING_CONTEXT: a collector layer, so X-Ray as the target, and a record stream).
const envTracingTemplate = "CRAWL_TEST_STACK_TEMPLATE_TRACING"

// collectorTraces is where the tracing template sends the spans: the collector layer's receiver.
const collectorTraces = "http://localhost:4318/v1/traces"

// TestIntegrationTracesOnLambda deploys the template synthesized with tracing on and crawls a
// small site with the real bootstraps under the runtime emulator. The spans go where the template
// says, the collector layer's receiver, played here by an OTLP/HTTP receiver on loopback. Every
// page's spans must arrive linked, from schedule through fetch to parse, by the traceparent that
// crossed each queue in the SQS message attributes, and the metrics must still be EMF lines that
// count the site's pages.
func TestIntegrationTracesOnLambda(t *testing.T) {
	_, dist, rie := paths(t)
	recv, url := newOTLPReceiver(t)
	d := deployTemplate(t, optionsTemplate(t), dist, rie, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url})
	for name, f := range d.stack.Functions {
		if got := f.Env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]; got != collectorTraces {
			t.Fatalf("%s: the template sends the spans to %q, want the collector layer's %s", name, got, collectorTraces)
		}
	}
	site := crawlSite(t, d)

	// Each invocation flushes its spans before it answers, so the crawl's end finds them sent;
	// the deadline only guards a slow machine.
	var spans []span
	deadline := time.Now().Add(10 * time.Second)
	for {
		var bad []string
		spans, bad = recv.received()
		if len(bad) > 0 {
			t.Fatalf("the receiver could not read %d requests: %v", len(bad), bad)
		}
		if fetchedAll(spans, site) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // poll, with the deadline above
	}
	checkLinkedPages(t, spans, site, spanNames(d))
	checkEMF(t, d, site)
}

// TestIntegrationMetricsWithTracingOff: with tracing off (the stack's default template) the
// same crawl's metrics are EMF lines that count its pages, and no function has a traces endpoint.
func TestIntegrationMetricsWithTracingOff(t *testing.T) {
	d := deploy(t)
	for name, f := range d.stack.Functions {
		for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
			if v, ok := f.Env[k]; ok {
				t.Errorf("%s: %s=%q with tracing off", name, k, v)
			}
		}
	}
	site := crawlSite(t, d)
	checkEMF(t, d, site)
}

// crawlSite uploads a seed file of a 6-page site and runs the deployment until its queues are
// empty.
func crawlSite(t *testing.T, d *deployment) *e2etest.Site {
	t.Helper()
	site := e2etest.NewSite(t, 6, 2)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	bucket := d.stack.Functions["schedule"].Env["CRAWL_BUCKET"]
	if _, err := d.clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("seeds/traced.txt"),
		Body: bytes.NewReader([]byte(site.URL + "\n")), ContentType: aws.String("text/plain")}); err != nil {
		t.Fatalf("upload the seed file: %v", err)
	}
	if err := d.runner(nil).Run(ctx); err != nil {
		t.Fatalf("the crawl did not finish within %v: %v", runTimeout, err)
	}
	for i := range site.Pages {
		if n := site.Hits(demosite.Path(i)); n != 1 {
			t.Fatalf("page %d was served %d times, want once", i, n)
		}
	}
	return site
}

// pageURL is the URL of the site's page i, as the crawl fetches it.
func pageURL(site *e2etest.Site, i int) string {
	return strings.TrimSuffix(site.URL, "/") + demosite.Path(i)
}

// fetchedAll reports whether spans hold a GET of every page of site.
func fetchedAll(spans []span, site *e2etest.Site) bool {
	got := map[string]bool{}
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_CLIENT && s.Name == "GET" {
			got[s.Attrs["url.full"]] = true
		}
	}
	for i := range site.Pages {
		if !got[pageURL(site, i)] {
			return false
		}
	}
	return true
}

// checkLinkedPages follows each page of site through its spans: the GET of the page (fetch)
// under a fetch record's span; that span's link to the schedule span that sent the message; in
// the GET's trace, the span that sent the parse message, to which a parse record's span links;
// and, for a page found on another, the schedule record's span in the sender's trace linked to
// the parse span that sent the link. A link exists only if the traceparent crossed the queue.
func checkLinkedPages(t *testing.T, spans []span, site *e2etest.Site, names map[string]string) {
	t.Helper()
	process, send := func(fn string) string { return "process " + names[fn] }, func(fn string) string { return "send " + names[fn] }
	byID := map[spanRef]span{}
	for _, s := range spans {
		byID[spanRef{s.Trace, s.ID}] = s
	}
	// linkedFrom finds a span named name of service in the given trace (any: "") whose links
	// include a span accepted by to.
	linkedFrom := func(service, name, trace string, to func(span) bool) (span, bool) {
		for _, s := range spans {
			if s.Service != service || s.Name != name || (trace != "" && s.Trace != trace) {
				continue
			}
			for _, l := range s.Links {
				if p, ok := byID[l]; ok && to(p) {
					return s, true
				}
			}
		}
		return span{}, false
	}
	producer := func(service, name string) func(span) bool {
		return func(s span) bool {
			return s.Service == service && s.Name == name && s.Kind == tracepb.Span_SPAN_KIND_PRODUCER
		}
	}
	for i := range site.Pages {
		page := pageURL(site, i)
		var get span
		for _, s := range spans {
			if s.Service == "crawlstack-fetch" && s.Kind == tracepb.Span_SPAN_KIND_CLIENT && s.Attrs["url.full"] == page {
				get = s
			}
		}
		if get.ID == "" {
			t.Errorf("%s: no GET span from fetch", page)
			continue
		}
		record := get
		for record.Name != process("fetch") {
			parent, ok := byID[spanRef{record.Trace, record.Parent}]
			if !ok {
				break
			}
			record = parent
		}
		if record.Name != process("fetch") || record.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
			t.Errorf("%s: the GET span has no fetch record's span above it (top: %q)", page, record.Name)
			continue
		}
		var sent span
		for _, l := range record.Links {
			if p, ok := byID[l]; ok && producer("crawlstack-schedule", send("fetch"))(p) {
				sent = p
			}
		}
		if sent.ID == "" {
			t.Errorf("%s: the fetch record's span links to %v, none a schedule span that sent the fetch message", page, record.Links)
			continue
		}
		if _, ok := linkedFrom("crawlstack-parse", process("parse"), "", func(p span) bool {
			return producer("crawlstack-fetch", send("parse"))(p) && p.Trace == get.Trace
		}); !ok {
			t.Errorf("%s: no parse record's span links to the parse message sent in the fetch's trace %s", page, get.Trace)
		}
		if i == 0 {
			continue // the seed: schedule read it from the seed file, which S3's notification carries no trace of
		}
		if _, ok := linkedFrom("crawlstack-schedule", process("schedule"), sent.Trace, producer("crawlstack-parse", send("schedule"))); !ok {
			t.Errorf("%s: the schedule trace %s that sent its fetch message has no record span linked to a parse span that sent links",
				page, sent.Trace)
		}
	}
	if t.Failed() {
		for _, s := range spans {
			t.Logf("%s %s %s %s parent %s links %v %v", s.Service, s.Trace[:8], s.ID[:8], s.Name, s.Parent, s.Links, s.Kind)
		}
	}
}

// spanNames are the names the spans give each function's queue (the last part of its URL), by
// function: "send NAME" for the span that sent messages to it, "process NAME" for a record's.
func spanNames(d *deployment) map[string]string {
	out := map[string]string{}
	for name, f := range d.stack.Functions {
		out[name] = f.Mapping.QueueURL[strings.LastIndex(f.Mapping.QueueURL, "/")+1:]
	}
	return out
}

// checkEMF reads the functions' EMF lines from their output and holds them to the crawl: every
// line in the template's namespace, naming only metrics.Series. The URLs that reached a terminal
// state and the URLs admitted, no series since issue 43, each sum to the site's pages in the
// ledger's invocation lines, which the dashboard charts (pages.terminal, admission.admitted; its
// one link that robots.txt disallows is refused by parse, before its admission).
func checkEMF(t *testing.T, d *deployment, site *e2etest.Site) {
	t.Helper()
	namespace := d.stack.Functions["schedule"].Env["CRAWL_METRICS_NAMESPACE"]
	sums := map[string]float64{}
	lines, invocations := 0, 0
	for name, pool := range d.pools {
		sc := bufio.NewScanner(strings.NewReader(pool.Output()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line struct {
				AWS *struct {
					CloudWatchMetrics []struct {
						Namespace string
						Metrics   []struct{ Name string }
					}
				} `json:"_aws"`
			}
			var fields map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil || json.Unmarshal(sc.Bytes(), &fields) != nil {
				continue
			}
			if fields["message"] == "invocation" { // as Lambda's log handler names slog's msg: the dashboard's queries filter on it
				admission, _ := fields["admission"].(map[string]any)
				admitted, _ := admission["admitted"].(float64)
				sums["admission.admitted"] += admitted
				pages, _ := fields["pages"].(map[string]any)
				terminal, _ := pages["terminal"].(float64)
				sums["pages.terminal"] += terminal
				invocations++
				continue
			}
			if line.AWS == nil {
				continue
			}
			lines++
			for _, cw := range line.AWS.CloudWatchMetrics {
				if cw.Namespace != namespace {
					t.Errorf("%s: an EMF line in namespace %q, want the template's %q", name, cw.Namespace, namespace)
				}
				for _, m := range cw.Metrics {
					if !slices.Contains(metrics.Series, m.Name) {
						t.Errorf("%s: an EMF line names %s, not one of metrics.Series %v", name, m.Name, metrics.Series)
					}
					if v, ok := fields[m.Name].(float64); ok {
						sums[m.Name] += v
					}
				}
			}
		}
	}
	if lines == 0 {
		t.Fatal("no EMF line in the functions' output: the dashboard and the alarms would see nothing")
	}
	if want := float64(site.Pages); sums["pages.terminal"] != want {
		t.Errorf("pages.terminal sums to %v in %d invocation lines, want the site's %d pages", sums["pages.terminal"], invocations, site.Pages)
	}
	if want := float64(site.Pages); sums["admission.admitted"] != want {
		t.Errorf("admission.admitted sums to %v in %d invocation lines, want the site's %d pages (parse refuses /private/secret before its admission)",
			sums["admission.admitted"], invocations, site.Pages)
	}
	if t.Failed() {
		t.Logf("sums: %s", fmt.Sprint(sums))
	}
}
