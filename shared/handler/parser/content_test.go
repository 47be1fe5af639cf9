package parser_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/pdftext"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/testkit/pdfgen"
)

// specCrawls gives every crawl the settings of one spec.
type specCrawls struct{ c *crawlspec.Crawl }

func (s specCrawls) For(context.Context, string) (*crawlspec.Crawl, error) { return s.c, nil }

func withSpec(t *testing.T, e *env, spec string) {
	t.Helper()
	s, err := crawlspec.Parse([]byte("version: 1\nseeds: [http://127.0.0.1/]\nmax_depth: 3\n"+spec), crawlspec.Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Over(crawlspec.Crawl{})
	if err != nil {
		t.Fatal(err)
	}
	e.with(func(d *parser.Deps) { d.Crawls = specCrawls{c} })
}

// aPanickingPDF is a PDF that makes the PDF library panic (pdfgen.Poison).
func aPanickingPDF(t *testing.T, good []byte) []byte {
	t.Helper()
	b, err := pdfgen.Poison(good, 10000, func(b []byte) bool {
		_, err := pdftext.Extract(context.Background(), b, nil, pdftext.Limits{})
		return err != nil && strings.Contains(err.Error(), "the pdf reader failed")
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// servedPage is one response of a batch's WARC file.
type servedPage struct {
	path, contentType string
	body              []byte
}

// batchOf stores pages in one WARC file, as fetch stores a batch, and returns one parse message
// each, its URL admitted, and the messages in the same order.
func (e *env) batchOf(pages []servedPage) ([]events.SQSMessage, []*message.Parse) {
	e.t.Helper()
	rec, m := e.sample()
	var wp []warcfile.Page
	for _, p := range pages {
		wp = append(wp, warcfile.Page{URL: m.Root + p.path, Status: 200, Header: http.Header{"Content-Type": {p.contentType}},
			Body: p.body, FetchedAt: m.FetchedAt})
	}
	raw, spans, err := warcfile.Encode(wp)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.blobs.Put(context.Background(), m.WARC.Key, raw, warcfile.ContentType); err != nil {
		e.t.Fatal(err)
	}
	var recs []events.SQSMessage
	var msgs []*message.Parse
	for i, p := range pages {
		pm := *m
		pm.URL, pm.FinalURL, pm.ContentType = m.Root+p.path, m.Root+p.path, p.contentType
		pm.WARC.Offset, pm.WARC.Length = spans[i].Offset, spans[i].Length
		if _, err := e.state.Admit(context.Background(), pm.Crawl, urlnorm.Key(pm.URL), pm.URL, pm.Root, pm.Depth, "links"); err != nil {
			e.t.Fatal(err)
		}
		body, err := message.Encode(pm)
		if err != nil {
			e.t.Fatal(err)
		}
		r := rec
		r.MessageId, r.Body = "msg-"+strconv.Itoa(i), body
		recs = append(recs, r)
		msgs = append(msgs, &pm)
	}
	return recs, msgs
}

// One parse batch of an HTML page, a PDF, a PDF that makes the library panic, a JSON API response
// and a text file, in a crawl that parses all three kinds: every message succeeds; the good pages
// are recorded with what was written into them (the PDF by another library), the poison PDF with
// a parse error, and the PDF's links are followed.
func TestContentKindsBesideHTMLInOneBatch(t *testing.T) {
	e := newEnv(t)
	withSpec(t, e, "parse: [pdf, json, text]\nextract:\n  title: {css: title}\n  api: {json: $.name}\nitems:\n  rows:\n    json: $.rows\n    fields: {id: {json: $.id}, link: {json: $.href, url: true}}\n")
	doc := pdfgen.Doc{Title: "Annual report", Author: "Grace Hopper", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Pages: [][]string{{"Revenue grew"}, {"Costs fell"}}, Links: []string{"/from-pdf", "https://other.example/x"}}
	good, err := pdfgen.Write(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("caf\u00e9 ", 3) + "\n" + strings.Repeat("x", 70<<10)
	recs, msgs := e.batchOf([]servedPage{
		{"page.html", "text/html; charset=utf-8", []byte("<title>Home</title><a href=\"/from-html\">a</a>")},
		{"report.pdf", "application/pdf", good},
		{"poison.pdf", "application/pdf", aPanickingPDF(t, good)},
		{"api.json", "application/json", []byte(`{"name": "kettles", "rows": [{"id": 1, "href": "/r/1"}, {"id": 12345678901234567890, "href": "r/2"}]}`)},
		{"notes.txt", "text/plain; charset=utf-8", []byte(text)},
	})
	if got := e.handle(recs...); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	by := map[string]records.Record{}
	for _, r := range e.records(msgs[0].Crawl) {
		by[r.URL[strings.LastIndex(r.URL, "/")+1:]] = r
	}
	if r := by["page.html"]; r.Title != "Home" || r.Class != "" || r.Text != "" || r.PDF != nil {
		t.Errorf("html record %+v", r)
	}
	root := msgs[0].Root
	pdf := by["report.pdf"]
	if pdf.Class != "" || pdf.Title != doc.Title || pdf.PDF == nil || pdf.PDF.Author != doc.Author || pdf.PDF.Pages != 2 ||
		pdf.PDF.Created != "2026-01-02T03:04:05Z" || !strings.Contains(pdf.Text, "Revenue grew") || !strings.Contains(pdf.Text, "Costs fell") {
		t.Errorf("pdf record: class %q error %q title %q pdf %+v text %q", pdf.Class, pdf.Error, pdf.Title, pdf.PDF, pdf.Text)
	}
	if want := []string{root + "from-pdf", "https://other.example/x"}; !slices.Equal(pdf.OutLinks, want) {
		t.Errorf("pdf out-links %v, want %v", pdf.OutLinks, want)
	}
	if p := by["poison.pdf"]; p.Class != errclass.Parse || !strings.Contains(p.Error, "the pdf reader failed") || p.Digest == "" {
		t.Errorf("poison pdf record: class %q error %q digest %q; want a parse error that says the reader failed", p.Class, p.Error, p.Digest)
	}
	api := by["api.json"]
	wantRows := fmt.Sprint([]any{map[string]any{"id": 1, "link": root + "r/1"}, map[string]any{"id": 12345678901234567890.0, "link": root + "r/2"}})
	if api.Class != "" || api.Data["api"] != "kettles" || api.Data["title"] != nil || fmt.Sprint(api.Items["rows"]) != wantRows {
		t.Errorf("json record: class %q error %q data %v items %v; want rows %s", api.Class, api.Error, api.Data, api.Items, wantRows)
	}
	txt := by["notes.txt"]
	if !strings.HasPrefix(txt.Text, "caf\u00e9 caf\u00e9") || !txt.TextTruncated || len(txt.Text) != 64<<10 {
		t.Errorf("text record: %d bytes, truncated %v, starts %q", len(txt.Text), txt.TextTruncated, txt.Text[:min(20, len(txt.Text))])
	}
	want := []string{root + "from-html", root + "from-pdf", "https://other.example/x"}
	if sent := e.linksSent(); !slices.Equal(sent, want) {
		t.Errorf("links sent %v, want %v", sent, want)
	}
}

// linksSent are the URLs of every links message on the schedule queue, sorted.
func (e *env) linksSent() []string {
	e.t.Helper()
	var urls []string
	for _, l := range e.linksMessages() {
		urls = append(urls, l.URLs...)
	}
	slices.Sort(urls)
	return urls
}

// A crawl that does not parse a kind records its pages as kept, unparsed (the keep list), and a
// JSON body that is not JSON is a parse error of its own record only.
func TestAKindNotParsedIsKeptAndBadJSONIsAnError(t *testing.T) {
	e := newEnv(t)
	withSpec(t, e, "keep: [application/pdf]\nextract:\n  api: {json: $.name}\n")
	good, err := pdfgen.Write(pdfgen.Doc{Title: "t", Pages: [][]string{{"words"}}})
	if err != nil {
		t.Fatal(err)
	}
	recs, msgs := e.batchOf([]servedPage{
		{"report.pdf", "application/pdf", good},
		{"bad.json", "application/json", []byte(`{"name": `)},
		{"good.json", "application/problem+json", []byte(`{"name": "ok"}`)},
	})
	if got := e.handle(recs...); len(got) != 0 {
		t.Fatalf("BatchItemFailures = %v, want none", got)
	}
	by := map[string]records.Record{}
	for _, r := range e.records(msgs[0].Crawl) {
		by[r.URL[strings.LastIndex(r.URL, "/")+1:]] = r
	}
	if r := by["report.pdf"]; r.Class != "" || r.Text != "" || r.PDF != nil || r.Title != "" {
		t.Errorf("a pdf of a crawl that keeps but does not parse pdf: %+v", r)
	}
	if r := by["bad.json"]; r.Class != errclass.Parse || !strings.Contains(r.Error, "read the JSON") {
		t.Errorf("bad json: class %q error %q", r.Class, r.Error)
	}
	if r := by["good.json"]; r.Class != "" || r.Data["api"] != "ok" {
		t.Errorf("good json: class %q data %v", r.Class, r.Data)
	}
}

// A recrawl that finds a PDF unchanged reuses its previous record whole, the text and metadata
// too, without reading the PDF (its payload is not where the revisit says: a read would fail).
func TestAnUnchangedPDFReusesItsTextAndMetadata(t *testing.T) {
	e := newEnv(t)
	withSpec(t, e, "parse: [pdf, json]\nitems:\n  rows: {json: $.rows, fields: {id: {json: $.id}}}\n")
	e.with(func(d *parser.Deps) { d.Prior = e.blobs })
	body, err := pdfgen.Write(pdfgen.Doc{Title: "Old report", Author: "Ada", Pages: [][]string{{"some words"}}})
	if err != nil {
		t.Fatal(err)
	}
	rec, m := e.sample()
	raw, _, err := warcfile.Encode([]warcfile.Page{{URL: m.FinalURL, Status: 200, Header: http.Header{"Content-Type": {"application/pdf"}},
		Body: body, FetchedAt: m.FetchedAt}})
	if err != nil {
		t.Fatal(err)
	}
	m.ContentType = "application/pdf"
	if failed := e.handle(e.store(rec, m, raw, 0)); len(failed) != 0 {
		t.Fatalf("the first parse failed: %v", failed)
	}
	prev := e.records(m.Crawl)[0]
	if prev.PDF == nil || prev.Text == "" {
		t.Fatalf("the first record has no PDF text: %+v", prev)
	}
	again := *m
	again.Crawl, again.Status = "again", 304
	again.WARC = message.Ref{Key: "pages/again/revisits.warc.gz", Offset: 0, Length: 10}
	again.Unchanged = &message.Unchanged{Profile: warcfile.ProfileNotModified, Payload: message.Ref{Key: "pages/gone.warc.gz", Length: 99},
		URI: m.FinalURL, Date: m.FetchedAt, Digest: prev.Digest, Crawl: m.Crawl, Msg: m.Name()}
	rec2, _ := e.sample()
	if failed := e.handle(e.message(rec2, &again)); len(failed) != 0 {
		t.Fatalf("the recrawl's parse failed: %v", failed)
	}
	r := e.records("again")[0]
	if !r.Unchanged || r.Title != "Old report" || r.Text != prev.Text || r.PDF == nil || *r.PDF != *prev.PDF {
		t.Errorf("the recrawl's record: title %q text %q pdf %+v; want the previous %q %q %+v", r.Title, r.Text, r.PDF, prev.Title, prev.Text, prev.PDF)
	}
}
