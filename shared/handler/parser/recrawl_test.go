package parser_test

import (
	"slices"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
)

// unchangedAgain parses the sample page in its crawl, as the previous crawl, and returns the
// message of a recrawl ("again") that found the page unchanged: its revisit names payload as
// where the payload is, and the sample's message as the one that holds its previous record.
func unchangedAgain(t *testing.T, e *env, payload message.Ref) (*message.Parse, records.Record) {
	t.Helper()
	rec, m := e.sample()
	page := `<title>Old</title>` + links + `<a rel="nofollow" href="/nf">nofollow</a>`
	rec = e.store(rec, m, warc(t, m.FinalURL, nil, page), 0)
	if failed := e.handle(rec); len(failed) != 0 {
		t.Fatalf("the first parse failed: %v", failed)
	}
	if got := e.sent(m); !slices.Equal(got, []string{"http://example.test/about", "http://example.test/blog/"}) {
		t.Fatalf("the first parse sent %v", got)
	}
	prev := e.records(m.Crawl)[0]
	again := *m
	again.Crawl, again.Status = "again", 304
	again.WARC = message.Ref{Key: "pages/again/revisits.warc.gz", Offset: 0, Length: 10} // a revisit: never read
	if payload.Key == "" {
		payload = m.WARC
	}
	again.Unchanged = &message.Unchanged{Profile: warcfile.ProfileNotModified, Payload: payload, URI: m.FinalURL,
		Date: time.Date(2026, 11, 29, 20, 0, 1, 0, time.UTC), Digest: prev.Digest, Crawl: m.Crawl, Msg: m.Name()}
	return &again, prev
}

func TestAnUnchangedPageReusesThePreviousRecordWithoutReadingIt(t *testing.T) {
	e := newEnv(t)
	e.with(func(d *parser.Deps) { d.Prior = e.blobs })
	// The payload is not where the revisit says: reading it would fail the message.
	again, prev := unchangedAgain(t, e, message.Ref{Key: "pages/gone.warc.gz", Offset: 0, Length: 99})
	rec, _ := e.sample()
	before := e.reads.calls
	if failed := e.handle(e.message(rec, again)); len(failed) != 0 {
		t.Fatalf("the recrawl's parse failed: %v", failed)
	}
	if e.reads.calls != before {
		t.Errorf("the unchanged page was read (%d ranged GETs): its previous record should have been reused", e.reads.calls-before)
	}
	got := e.records("again")
	if len(got) != 1 {
		t.Fatalf("%d records, want 1", len(got))
	}
	r := got[0]
	if !r.Unchanged || r.Title != "Old" || !slices.Equal(r.OutLinks, prev.OutLinks) || !slices.Equal(r.NoFollowLinks, []string{"http://example.test/nf"}) ||
		r.Digest != prev.Digest || r.Status != 304 || r.ContentType != prev.ContentType {
		t.Errorf("record %+v, want the previous one's %+v, unchanged, with status 304", r, prev)
	}
	// The previous links are followed again, but the nofollow one.
	if sent := e.sent(again); !slices.Equal(sent, []string{"http://example.test/about", "http://example.test/blog/"}) {
		t.Errorf("the recrawl sent %v", sent)
	}
}

func TestAnUnchangedPageWithoutItsPreviousRecordIsParsedFromItsPayload(t *testing.T) {
	e := newEnv(t)
	again, prev := unchangedAgain(t, e, message.Ref{}) // the payload is the first crawl's record
	rec, _ := e.sample()
	before := e.reads.calls
	if failed := e.handle(e.message(rec, again)); len(failed) != 0 {
		t.Fatalf("the recrawl's parse failed: %v", failed)
	}
	if e.reads.calls == before {
		t.Error("the payload was not read, with no previous record to reuse")
	}
	r := e.records("again")[0]
	if !r.Unchanged || r.Title != "Old" || r.Digest != prev.Digest || r.ContentType != prev.ContentType {
		t.Errorf("record %+v, want the title and digest of the payload, unchanged", r)
	}
	if sent := e.sent(again); !slices.Equal(sent, []string{"http://example.test/about", "http://example.test/blog/"}) {
		t.Errorf("the recrawl sent %v", sent)
	}
	// A payload that is gone fails the message, to be retried; nothing is recorded.
	again.Unchanged.Payload = message.Ref{Key: "pages/gone.warc.gz", Offset: 0, Length: 99}
	again.Crawl = "gone"
	if failed := e.handle(e.message(rec, again)); len(failed) != 1 {
		t.Errorf("a revisit whose payload is gone: failures %v, want its message", failed)
	}
}
