package e2etest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
)

// CheckNothingLost proves invariant 1 on the site alone: every admitted URL is in exactly one
// terminal state, the live counters match the items, every page was fetched and has a record,
// and every dead-letter queue is empty.
func (h *Harness) CheckNothingLost(crawl string) {
	h.T.Helper()
	h.CheckInvariants(crawl, true)
}

// CheckInvariants is CheckNothingLost; exactCounters also holds the live counters to the items
// (they may drift by one per crash, which is why summaries use Tally).
func (h *Harness) CheckInvariants(crawl string, exactCounters bool) {
	h.T.Helper()
	h.checkInvariants(crawl, exactCounters, h.Site.Pages)
}

// checkInvariants is CheckInvariants for a crawl that fetched pages URLs.
func (h *Harness) checkInvariants(crawl string, exactCounters bool, pages int) {
	t := h.T
	t.Helper()
	ctx := context.Background()
	st := crawlstate.New(h.Table)
	c, err := st.Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pending() != 0 || c.Fetched != int64(pages) || c.Failed != 0 {
		t.Errorf("counters = %+v: want %d fetched, none pending or failed", c, pages)
	}
	states := map[crawlstate.State]int{}
	if err := st.EachURL(ctx, crawl, func(u crawlstate.URL) error {
		if !u.State.Terminal() {
			t.Errorf("url %s is still %s", u.URL, u.State)
		}
		if u.State == crawlstate.Fetched {
			if parsed, err := st.PageParsed(ctx, crawl, u); err != nil || !parsed {
				t.Errorf("url %s was fetched but its parse message was never marked done (%v)", u.URL, err)
			}
		}
		states[u.State]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if states[crawlstate.Fetched] != pages {
		t.Errorf("items by state = %v, want %d fetched", states, pages)
	}
	if exactCounters {
		live, err := st.Counters(ctx, crawl)
		if err != nil {
			t.Fatal(err)
		}
		if live.Seen != c.Seen || live.Fetched != c.Fetched || live.Skipped != c.Skipped || live.Failed != c.Failed {
			t.Errorf("live counters %+v differ from the items %+v", live, c)
		}
	}
	h.CheckSite()
	h.CheckRecords(crawl)
	h.CheckDLQs(map[string]int{})
}

// CheckSite checks what the site saw: every page, and nothing robots.txt or nofollow forbids.
func (h *Harness) CheckSite() {
	h.T.Helper()
	if got := h.Site.Fetched(); got != h.Site.Pages {
		h.T.Errorf("the site served %d distinct pages, want %d", got, h.Site.Pages)
	}
	if n := h.Site.Hits("/private/secret") + h.Site.Hits("/p/nofollow-never-fetched"); n != 0 {
		h.T.Errorf("fetched a robots-disallowed or nofollow page %d times", n)
	}
}

// CheckRecords checks that every page of the site has a JSONL record in the blob store.
func (h *Harness) CheckRecords(crawl string) {
	h.T.Helper()
	recs := h.Records(crawl)
	for i := 0; i < h.Site.Pages; i++ {
		if !recs[h.Site.PageURL(i)] {
			h.T.Errorf("no record for page %d (%d records in all)", i, len(recs))
			return
		}
	}
}

// Records returns the URLs that have a record in records/.
func (h *Harness) Records(crawl string) map[string]bool {
	h.T.Helper()
	out := map[string]bool{}
	for _, r := range h.RecordsOf(crawl) {
		out[r.URL] = true
	}
	return out
}

// RecordsOf returns crawl's records in records/, each page's last (a redelivered parse message
// may store a page's record twice).
func (h *Harness) RecordsOf(crawl string) map[string]records.Record {
	h.T.Helper()
	ctx := context.Background()
	keys, err := h.Blobs.List(ctx, records.Dir(crawl))
	if err != nil {
		h.T.Fatal(err)
	}
	out := map[string]records.Record{}
	for _, k := range keys {
		b, err := h.Blobs.Get(ctx, k)
		if err != nil {
			h.T.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r records.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				h.T.Fatalf("record in %s: %v", k, err)
			}
			out[r.URL] = r
		}
		if err := sc.Err(); err != nil {
			h.T.Fatalf("records in %s: %v", k, err)
		}
	}
	return out
}

// CheckDLQs checks that each dead-letter queue holds the number of messages want gives it
// (0 when absent), waiting up to DLQSettle for the counts to settle.
func (h *Harness) CheckDLQs(want map[string]int) {
	h.T.Helper()
	got := h.dlqDepths()
	deadline := time.Now().Add(h.DLQSettle)
	for !sameDepths(got, want) && time.Now().Before(deadline) {
		PollPause()
		got = h.dlqDepths()
	}
	if !sameDepths(got, want) {
		h.T.Errorf("dead-letter queues hold %v, want %v", got, want)
	}
}

func (h *Harness) dlqDepths() map[string]int {
	h.T.Helper()
	out := map[string]int{}
	for name, q := range map[string]string{"schedule": h.Res.ScheduleDLQ, "fetch": h.Res.FetchDLQ, "parse": h.Res.ParseDLQ} {
		v, nv, err := h.Queue.Depth(context.Background(), q)
		if err != nil {
			h.T.Fatalf("depth of the %s dead-letter queue: %v", name, err)
		}
		if v+nv > 0 {
			out[name] = v + nv
		}
	}
	return out
}

func sameDepths(got, want map[string]int) bool {
	for _, n := range []string{"schedule", "fetch", "parse"} {
		if got[n] != want[n] {
			return false
		}
	}
	return true
}

// PollPause is the pause between two looks at a condition that a deadline bounds.
func PollPause() {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	<-t.C
}
