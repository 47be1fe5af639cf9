package tabletest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

func testConcurrentClaim(t *testing.T, tb table.Table, prefix string) {
	const workers = 8
	key := table.Key{Part: prefix, Sort: "claim"}
	race := func(t *testing.T, now int64) {
		t.Helper()
		var wg sync.WaitGroup
		wins := make(chan int, workers)
		errs := make(chan error, workers)
		start := make(chan struct{}) // released at once, so that the claims really race
		for w := range workers {
			wg.Go(func() {
				<-start
				_, err := tb.Update(context.Background(), key,
					table.Update{Set: map[string]any{"owner": fmt.Sprintf("w%d", w), "leaseUntil": now + 60}},
					table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", now)))
				if _, lost := table.IsConditionFailed(err); lost {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				wins <- w
			})
		}
		close(start)
		wg.Wait()
		close(wins)
		close(errs)
		for err := range errs {
			t.Errorf("claim: %v", err)
		}
		var winners []int
		for w := range wins {
			winners = append(winners, w)
		}
		if len(winners) != 1 {
			t.Fatalf("%d workers won the claim, want exactly 1 (%v)", len(winners), winners)
		}
		it := get(t, tb, key)
		if it.String("owner") != fmt.Sprintf("w%d", winners[0]) || it.Int("leaseUntil") != now+60 {
			t.Errorf("item after the claim = %#v, want owner w%d lease %d", it, winners[0], now+60)
		}
	}
	t.Run("Free", func(t *testing.T) { race(t, 1000) })
	// Each lease runs for 60: 100 later it has expired and exactly one worker wins again.
	t.Run("Expired", func(t *testing.T) {
		for round := range 10 {
			race(t, 1100+int64(round)*100)
		}
	})
}

func testConcurrentAdd(t *testing.T, tb table.Table, prefix string) {
	const workers, each = 8, 50
	key := table.Key{Part: prefix, Sort: "counter"}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				if _, err := tb.Update(context.Background(), key, table.Update{Add: map[string]int64{"count": 1}}, table.Cond{}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Update: %v", err)
	}
	if got := get(t, tb, key).Int("count"); got != workers*each {
		t.Errorf("count = %d, want %d", got, workers*each)
	}
}
