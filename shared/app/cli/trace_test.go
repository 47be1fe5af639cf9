package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// spanGraph indexes exported spans for walking from a consumer back to its producers.
type spanGraph map[trace.SpanID]tracetest.SpanStub

func (g spanGraph) attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

// ancestors is every span reached from s by going to a parent or to a linked span, again and again.
func (g spanGraph) ancestors(s tracetest.SpanStub) map[trace.SpanID]tracetest.SpanStub {
	seen := map[trace.SpanID]tracetest.SpanStub{}
	todo := []tracetest.SpanStub{s}
	for len(todo) > 0 {
		cur := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		next := []trace.SpanID{cur.Parent.SpanID()}
		for _, l := range cur.Links {
			next = append(next, l.SpanContext.SpanID())
		}
		for _, id := range next {
			if p, ok := g[id]; ok && id.IsValid() {
				if _, done := seen[id]; !done {
					seen[id] = p
					todo = append(todo, p)
				}
			}
		}
	}
	return seen
}

// path walks back from s to a root, by the parent or else the first link, and prints each span
// as a person reading the trace would see it (docs/operating.md shows one).
func (g spanGraph) path(s tracetest.SpanStub) string {
	var b strings.Builder
	for i := 0; i < 64; i++ {
		what := s.Name
		if u := g.attr(s, "url.full"); u != "" {
			what += " " + u + " -> " + g.attr(s, "http.response.status_code")
		}
		how := "parent"
		next := s.Parent.SpanID()
		if _, ok := g[next]; !ok && len(s.Links) > 0 {
			how, next = "link", s.Links[0].SpanContext.SpanID()
		}
		fmt.Fprintf(&b, "%-9s trace %s  span %s  %s\n", s.SpanKind, s.SpanContext.TraceID().String()[:8], s.SpanContext.SpanID().String()[:8], what)
		p, ok := g[next]
		if !ok {
			break
		}
		fmt.Fprintf(&b, "  ^ %s\n", how)
		s = p
	}
	return b.String()
}

// crawlSite crawls the site at base from its root page with crawl run and returns the summary.
func crawlSite(t *testing.T, base string) Summary {
	t.Helper()
	seeds := writeFile(t, "seeds.txt", base+"/\n")
	code, stdout, stderr := runMain(t, "run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--json", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	return lastJSON(t, stdout)
}

// TestACrawlIsOneTraceOfLinkedSpans runs a crawl of two pages with an in-memory exporter and
// follows the discovered page's fetch back, through parents and the links that the messages'
// traceparent attributes made, to the send of the seed file: through parse, schedule and the
// fetch invocation that fetched the seed.
func TestACrawlIsOneTraceOfLinkedSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithRawSpanLimits(telemetry.Limits()))
	defer telemetry.Use(tp)()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body><a href="/a">a</a></body></html>`)
	})
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body>the end</body></html>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if s := crawlSite(t, srv.URL); s.Fetched != 2 {
		t.Fatalf("fetched %d pages, want 2 (the seed and /a)", s.Fetched)
	}

	g := spanGraph{}
	gets := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		g[s.SpanContext.SpanID()] = s
		if s.Name == "GET" && g.attr(s, "crawl.fetch.kind") == "page" {
			gets[g.attr(s, "url.full")] = s
		}
	}
	seed, leaf := gets[srv.URL+"/"], gets[srv.URL+"/a"]
	if !seed.SpanContext.IsValid() || !leaf.SpanContext.IsValid() {
		t.Fatalf("no fetch span of the seed or of /a; page fetch spans: %v", gets)
	}
	if got := g.attr(leaf, "http.response.status_code"); got != "200" {
		t.Errorf("/a's fetch span has status %q, want 200", got)
	}

	t.Logf("/a back to the seed file:\n%s", g.path(leaf))
	anc := g.ancestors(leaf)
	names := map[string]int{}
	var roots []tracetest.SpanStub
	for _, s := range anc {
		names[s.Name]++
		if !s.Parent.IsValid() && len(s.Links) == 0 {
			roots = append(roots, s)
		}
	}
	// Parse sends a batch's links together, so its invocation, not one record's span, is the
	// producer of the discovered page's schedule message.
	for _, want := range []string{"process schedule", "process fetch", "schedule", "fetch", "parse"} {
		if names[want] < 1 {
			t.Errorf("no %q span on /a's path back to the seed; the path has %v", want, names)
		}
	}
	if len(roots) != 1 || !strings.HasPrefix(roots[0].Name, "send ") || roots[0].SpanKind != trace.SpanKindProducer {
		t.Fatalf("the path starts at %d roots, want one: the seed file's send; path: %v", len(roots), names)
	}
	// The fetch invocation that fetched the seed is on the discovered page's path.
	inv := g[g[seed.Parent.SpanID()].Parent.SpanID()]
	if inv.Name != "fetch" {
		t.Fatalf("the seed's fetch span's grandparent is %q, want the fetch invocation", inv.Name)
	}
	if _, ok := anc[inv.SpanContext.SpanID()]; !ok {
		t.Errorf("the invocation that fetched the seed is not on /a's path back to the seed")
	}
	if _, ok := g.ancestors(seed)[roots[0].SpanContext.SpanID()]; !ok {
		t.Errorf("the seed's fetch does not lead back to the seed file's send")
	}

	parsed := 0
	for _, s := range g {
		if p, ok := anc[s.Parent.SpanID()]; ok && s.Name == "process parse" && p.Name == "parse" {
			parsed++
		}
	}
	if parsed == 0 {
		t.Errorf("the parse invocation on /a's path has no record span")
	}

	// Every record's span links to the send that made its message: no trace context was lost.
	for _, s := range g {
		if !strings.HasPrefix(s.Name, "process ") {
			continue
		}
		if len(s.Links) != 1 {
			t.Errorf("record span %s has %d links, want 1 (its producer)", s.Name, len(s.Links))
			continue
		}
		p, ok := g[s.Links[0].SpanContext.SpanID()]
		if !ok || p.SpanKind != trace.SpanKindProducer {
			t.Errorf("record span %s links to %q (kind %v), want a send span", s.Name, p.Name, p.SpanKind)
		}
	}
}
