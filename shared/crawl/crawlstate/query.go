package crawlstate

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// queryWidth is how many partitions a read of a crawl's items queries at once: on DynamoDB a page
// of a Query takes some tens of milliseconds, and the tally of a crawl of a million URLs (about
// 500 MB) reads 500 pages, which must end well within the schedule function's timeout.
const queryWidth = 8

// errStopped is what a partition's query gets once another's fn has failed.
var errStopped = errors.New("the read of the crawl stopped")

// EachInCrawl calls fn for every item of the crawl whose sort key starts with prefix (a kind,
// such as BudgetKind), with a Query of each of its Shards partitions, queryWidth at once. fn is
// called for one item at a time, in no order across partitions, and never again once it has
// failed; EachInCrawl then returns its error, wrapped. It reads the crawl's items and nothing else.
func EachInCrawl(ctx context.Context, t table.Table, crawl, prefix string, fn func(sort string, it table.Item) error) error {
	return eachInParts(ctx, t, Shards, func(n int) string { return crawlPart(crawl, n) }, prefix, fn)
}

// eachInParts is EachInCrawl over the partitions part(0) to part(parts-1).
func eachInParts(ctx context.Context, t table.Table, parts int, part func(int) string, prefix string,
	fn func(sort string, it table.Item) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(queryWidth)
	var mu sync.Mutex
	var fnErr error
	for n := range parts {
		g.Go(func() error {
			return t.Query(gctx, part(n), prefix, func(sort string, it table.Item) error {
				mu.Lock()
				defer mu.Unlock()
				if fnErr != nil {
					return errStopped
				}
				if err := fn(sort, it); err != nil {
					fnErr = err
					return err
				}
				return nil
			})
		})
	}
	err := g.Wait()
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("read %s…: %w", part(0), err)
	}
	return nil
}

// EachSlot calls fn with the host of every politeness slot there is, as EachInCrawl does: a
// Query of each of the slots' SlotShards partitions, which hold nothing else.
func EachSlot(ctx context.Context, t table.Table, fn func(host string) error) error {
	return eachInParts(ctx, t, SlotShards, slotPart, "", func(host string, _ table.Item) error { return fn(host) })
}

// DeleteBudget deletes the crawl's page budget of the host (an erasure of the host).
func DeleteBudget(ctx context.Context, t table.Table, crawl, host string) error {
	if err := t.Delete(ctx, budgetKey(crawl, host), table.Cond{}); err != nil {
		return fmt.Errorf("delete the budget of %s in crawl %s: %w", host, crawl, err)
	}
	return nil
}

// DeleteSlot deletes the host's politeness slot (an erasure of the host).
func DeleteSlot(ctx context.Context, t table.Table, host string) error {
	if err := t.Delete(ctx, slotKey(host), table.Cond{}); err != nil {
		return fmt.Errorf("delete the politeness slot of %s: %w", host, err)
	}
	return nil
}

// hostNotePrefixes are the prefixes of the counter shards' attributes that name a host (hostAttr):
// the notes of throttled hosts and of circuits.
var hostNotePrefixes = []string{attrThrottleGap, attrThrottleAt, attrThrottleRaises, attrThrottleWhy,
	attrCircuitOpens, attrCircuitOpened, attrCircuitClosed}

// EraseHostNotes removes the crawl's notes of the hosts that match says are erased (an erasure of
// a host): their items of notes (hostnotes.go), and the notes in the crawl's counter shards
// written before those, whose attribute names spell the host. It returns how many note attributes
// it removed (or, with dryRun, would remove).
func EraseHostNotes(ctx context.Context, t table.Table, crawl string, match func(host string) bool, dryRun bool) (int, error) {
	n, err := eraseNoteItems(ctx, t, crawl, match, dryRun)
	if err != nil {
		return 0, err
	}
	m, err := eraseShardNotes(ctx, t, crawl, match, dryRun)
	return n + m, err
}

// eraseNoteItems deletes the crawl's items of notes of the hosts that match, and returns how many
// note attributes they held.
func eraseNoteItems(ctx context.Context, t table.Table, crawl string, match func(host string) bool, dryRun bool) (int, error) {
	var hosts []string
	n := 0
	err := eachInParts(ctx, t, noteParts, func(i int) string { return crawlPart(crawl, i) }, hostNoteKind,
		func(sort string, it table.Item) error {
			if host := sort[len(hostNoteKind):]; match(host) {
				hosts = append(hosts, host)
				for name := range it {
					if slices.Contains(hostNotePrefixes, name) {
						n++
					}
				}
			}
			return nil
		})
	if err != nil {
		return 0, fmt.Errorf("read the host notes of crawl %s: %w", crawl, err)
	}
	if dryRun {
		return n, nil
	}
	for _, h := range hosts {
		if err := t.Delete(ctx, hostNoteKey(crawl, h), table.Cond{}); err != nil && !errors.Is(err, table.ErrNotFound) {
			return 0, fmt.Errorf("erase the notes of %s in crawl %s: %w", h, crawl, err)
		}
	}
	return n, nil
}

// eraseShardNotes removes from the crawl's counter shards the notes of the hosts that match, and
// returns how many attributes it removed (or, with dryRun, would remove).
func eraseShardNotes(ctx context.Context, t table.Table, crawl string, match func(host string) bool, dryRun bool) (int, error) {
	type change struct {
		key    table.Key
		remove []string
	}
	var changes []change
	n := 0
	err := EachInCrawl(ctx, t, crawl, counterKind, func(sort string, it table.Item) error {
		var rm []string
		for name := range it {
			for _, p := range hostNotePrefixes {
				enc, ok := strings.CutPrefix(name, p)
				if !ok {
					continue
				}
				if host, err := base64.RawURLEncoding.DecodeString(enc); err == nil && match(string(host)) {
					rm = append(rm, name)
				}
				break
			}
		}
		if len(rm) == 0 {
			return nil
		}
		key, err := counterKeyOf(crawl, sort)
		if err != nil {
			return err
		}
		slices.Sort(rm)
		n += len(rm)
		changes = append(changes, change{key, rm})
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read the host notes of crawl %s: %w", crawl, err)
	}
	if dryRun {
		return n, nil
	}
	for _, c := range changes {
		if _, err := t.Update(ctx, c.key, table.Update{Remove: c.remove}, table.ItemExists()); err != nil {
			if _, gone := table.IsConditionFailed(err); !gone {
				return 0, fmt.Errorf("erase host notes from %s: %w", c.key, err)
			}
		}
	}
	return n, nil
}

// counterKeyOf is the key of the crawl's counter shard whose sort key is sort (n#<i>).
func counterKeyOf(crawl, sort string) (table.Key, error) {
	i, err := strconv.Atoi(strings.TrimPrefix(sort, counterKind))
	if err != nil || i < 0 || i >= CounterShards {
		return table.Key{}, fmt.Errorf("counter shard %q of crawl %s: not a shard's key", sort, crawl)
	}
	return ShardKey(crawl, i), nil
}
