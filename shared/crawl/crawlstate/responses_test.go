package crawlstate

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// testResponsesCountOnce: the responses of recorded outcomes are counted once, though the
// outcomes' write is applied and its answer lost (its caller records them again), and every
// counter write is replayed, one of them lost for good and sent again by the next write. The
// counts equal the outcomes given, and the tally carries them.
func testResponsesCountOnce(t *testing.T, tb table.Table) {
	ctx := context.Background()
	crawl := crawlName(t)
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3", "http://a.test/4", "http://a.test/5"}
	keys := admitted(t, New(tb), crawl, "M", urls...)
	f := tabletest.NewFaults(tb,
		tabletest.Rule{Op: "update", Key: groupKey(crawl, "G"), Nth: 1, Lost: true},
		tabletest.Rule{Op: "update", Sort: counterKind, Nth: 1, Lost: true},
		tabletest.Rule{Op: "update", Sort: counterKind}) // every other one: replayed
	s := New(f, WithBufferedCounters())
	page := func(n int) *Page {
		return &Page{WARCKey: "pages/" + crawl + "/a.warc.gz", Offset: int64(n), Length: 10, Status: 200}
	}
	outs := []Outcome{
		{Key: keys[0], URL: urls[0], State: Fetched, Page: page(1), Owner: "M", Status: 200, Bytes: 1000, Change: Changed},
		{Key: keys[1], URL: urls[1], State: Fetched, Page: page(2), Owner: "M", Status: 304, Change: Unchanged},
		{Key: keys[2], URL: urls[2], State: Failed, Owner: "M", Status: 404, Bytes: 50, Cause: errclass.Errorf(errclass.HTTP4xx, "status 404")},
		{Key: keys[3], URL: urls[3], State: Skipped, Owner: "M", Status: 200, Bytes: 7000, Cause: errclass.Errorf(errclass.Type, "not parsed")},
		{Key: keys[4], URL: urls[4], State: Skipped, Owner: "M", Cause: errclass.Errorf(errclass.Robots, "disallowed")},
	}
	if _, err := s.Record(ctx, crawl, "G", outs); !errors.Is(err, tabletest.ErrInjected) {
		t.Fatalf("Record with its answer lost = %v, want the injected failure", err)
	}
	if lost, err := s.Record(ctx, crawl, "G", outs); err != nil || len(lost) != 0 {
		t.Fatalf("Record again = lost %v, %v; want its own earlier write found", lost, err)
	}
	if err := s.WriteCounters(ctx); !errors.Is(err, tabletest.ErrInjected) {
		t.Fatalf("first counter write = %v, want its answer lost", err)
	}
	if err := s.WriteCounters(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Injected(), "\n"); !strings.Contains(got, "lose") || !strings.Contains(got, "replay") {
		t.Fatalf("faults injected:\n%s\nwant lost answers and replays", got)
	}
	want := Responses{Statuses: map[int]int64{200: 2, 304: 1, 404: 1}, Bytes: 8050, Changed: 1, Unchanged: 1}
	c, err := New(tb).Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	checkResponses(t, "counters", c.Responses, want)
	tally, err := New(tb).Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	checkResponses(t, "tally", tally.Responses, want)
	wantCounts(t, New(tb), crawl, map[string]int64{"seen": 5, "fetched": 2, "failed": 1, "skipped": 2})
	if got, want := c.Responses.ByClass(), map[string]int64{"2xx": 2, "3xx": 1, "4xx": 1}; !maps.Equal(got, want) {
		t.Errorf("by class = %v, want %v", got, want)
	}
}

func checkResponses(t *testing.T, what string, got, want Responses) {
	t.Helper()
	if !maps.Equal(got.Statuses, want.Statuses) || got.Bytes != want.Bytes || got.Changed != want.Changed || got.Unchanged != want.Unchanged {
		t.Errorf("%s: responses %+v, want %+v", what, got, want)
	}
}

func TestStatusCounterNames(t *testing.T) {
	for _, tt := range []struct {
		code int
		want string
	}{{200, "sc200"}, {404, "sc404"}, {999, "sc999"}, {0, ""}, {99, ""}, {1000, ""}, {-200, ""}} {
		if got := statusCounter(tt.code); got != tt.want {
			t.Errorf("statusCounter(%d) = %q, want %q", tt.code, got, tt.want)
		}
	}
	// Attributes that only look like a status counter are not read as one.
	var r Responses
	r.add(table.Item{"sc200": int64(3), "sc20": int64(1), "sc0200": int64(1), "scabc": int64(1), "sc404": int64(0), "resp_bytes": int64(9)})
	if !maps.Equal(r.Statuses, map[int]int64{200: 3}) || r.Bytes != 9 {
		t.Errorf("read %+v, want 3 of 200 and 9 bytes", r)
	}
}
