package e2etest

import (
	"context"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// admitFaults is a table that fails the first two writes of every URL's item at minDepth or deeper
// ("before a URL of a Links message is admitted": a seed's, a page's link, one refused), so that
// every Links message with a URL new to the crawl, its last one too, fails twice before its URLs
// are admitted. It keeps the URLs whose admission failed and was not yet written again.
type admitFaults struct {
	table.Table
	minDepth int64

	mu      sync.Mutex
	tries   map[table.Key]int
	pending map[table.Key]bool // URL items whose write failed, not yet written again
	faults  int
}

func (t *admitFaults) Put(ctx context.Context, key table.Key, it table.Item, cond table.Cond) error {
	if crawlstate.KindOf(key) == "url" && it.Int("depth") >= t.minDepth {
		t.mu.Lock()
		if t.tries == nil {
			t.tries, t.pending = map[table.Key]int{}, map[table.Key]bool{}
		}
		t.tries[key]++
		fail := t.tries[key] <= 2
		if fail {
			t.pending[key] = true
			t.faults++
		}
		t.mu.Unlock()
		if fail {
			return errCrash
		}
	}
	err := t.Table.Put(ctx, key, it, cond)
	if _, found := table.IsConditionFailed(err); err == nil || found {
		t.mu.Lock()
		delete(t.pending, key)
		t.mu.Unlock()
	}
	return err
}

// left returns how many URLs' admissions failed and are not yet written again, and the faults
// injected.
func (t *admitFaults) left() (pending, faults int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending), t.faults
}

// CheckEndWaitsForLinksFailingTwice crawls the site with its end announced by drain checks that
// tally as soon as the crawl's counters stop moving (a quiet time of a millisecond, far shorter
// than the queues' visibility timeout), while every Links message with a URL new to the crawl at
// minDepth or deeper fails twice before its URLs are admitted: with minDepth 0 the seed file's
// too, with 1 the pages' links alone, the last page's too. The end waits for every Links message:
// it is announced once, after every URL was admitted, with every page fetched and recorded.
func (h *Harness) CheckEndWaitsForLinksFailingTwice(minDepth, concurrency int) {
	t := h.T
	t.Helper()
	cfg := h.endConfig()
	cfg.FinishQuiet = time.Millisecond
	ports := h.Ports()
	faults := &admitFaults{Table: h.Table, minDepth: int64(minDepth)}
	ports.Table = faults
	var crawl string
	var pendingAtPut, servedAtPut, recordsAtPut int
	ann := &Announcer{OnPut: func(finish.Event) {
		pendingAtPut, _ = faults.left()
		servedAtPut, recordsAtPut = h.Site.Fetched(), len(h.Records(crawl))
	}}
	ports.Events = ann
	ctx := context.Background()
	crawl, err := h.Start(ctx, h.Res, "seeds.txt", []byte(h.Site.URL+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Run(ctx, crawl, cfg, ports, h.Queue, concurrency); err != nil {
		t.Fatal(err)
	}
	put, _ := ann.Put()
	if len(put) != 1 {
		t.Fatalf("%d events put, want 1", len(put))
	}
	if _, n := faults.left(); n < 2 {
		t.Fatalf("%d admissions failed: the test wants every Links message's to fail twice", n)
	}
	if pendingAtPut != 0 {
		t.Errorf("the end was announced while %d URLs of Links messages that failed were still to be admitted", pendingAtPut)
	}
	if servedAtPut != h.Site.Pages || recordsAtPut != h.Site.Pages {
		t.Errorf("when the event was put the site had served %d pages and %d had records, want all %d", servedAtPut, recordsAtPut, h.Site.Pages)
	}
	if e := put[0]; e.End != finish.EndDrained || e.Counts.Fetched != int64(h.Site.Pages) {
		t.Errorf("event end %q, %d fetched: want %q, %d (the site's pages)", e.End, e.Counts.Fetched, finish.EndDrained, h.Site.Pages)
	}
	h.CheckNothingLost(crawl)
}
