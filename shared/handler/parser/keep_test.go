package parser_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
)

// A page of a type the crawl keeps though it is not parsed (the spec's keep) is recorded with its
// status, type and digest, without links and without a parse error, and its message is done.
func TestAKeptPageIsRecordedWithoutParsing(t *testing.T) {
	e := newEnv(t)
	rec, m := e.sample()
	body := []byte("%PDF-1.4 not html <a href=\"/about\">about</a>")
	raw, _, err := warcfile.Encode([]warcfile.Page{{URL: m.FinalURL, Status: 200, Header: http.Header{"Content-Type": {"application/pdf"}},
		Body: body, FetchedAt: time.Date(2026, 11, 29, 20, 0, 1, 0, time.UTC)}})
	if err != nil {
		t.Fatal(err)
	}
	m.ContentType = "application/pdf"
	rec = e.store(rec, m, raw, 0)
	if got := e.handle(rec); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none", got)
	}
	if got := e.sent(m); len(got) != 0 {
		t.Errorf("links sent = %v, want none", got)
	}
	recs := e.records(m.Crawl)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	r := recs[0]
	if r.ContentType != "application/pdf" || r.Class != "" || r.Error != "" || len(r.OutLinks) != 0 || r.Digest == "" {
		t.Errorf("record = %+v, want application/pdf with its digest, no class, no error, no links", r)
	}
	if done, err := e.state.IsMessageParsed(context.Background(), m.Crawl, m.Name()); err != nil || !done {
		t.Errorf("message %s parsed: %v, %v; want marked parsed", m.Name(), done, err)
	}
}
