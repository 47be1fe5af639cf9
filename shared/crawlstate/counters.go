package crawlstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/errclass"
	"github.com/crawlstack/crawlstack/shared/table"
)

// CountParseError counts a page whose parse failed (its URL stays fetched).
func (s *Store) CountParseError(ctx context.Context, crawl string, class errclass.Class) error {
	return s.count(ctx, crawl, map[string]int64{"parse_errors": 1, "class_" + string(class): 1})
}

// CountPoison counts a quarantined message of the crawl.
func (s *Store) CountPoison(ctx context.Context, crawl string) error {
	return s.count(ctx, crawl, map[string]int64{"class_" + string(errclass.Poison): 1})
}

func (s *Store) count(ctx context.Context, crawl string, add map[string]int64) error {
	if s.BufferCounters {
		s.buffer(crawl, add)
		return nil
	}
	_, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Add: add}, table.Cond{})
	if err != nil {
		return fmt.Errorf("count crawl %s: %w", crawl, err)
	}
	return nil
}

// Flush writes the buffered counter increments, one update per crawl, unless HoldCounters keeps
// them for WriteCounters. Increments it could not write stay buffered for the next Flush. The
// counters are for progress and the crawl record; a process that dies with increments buffered
// leaves them low, and Tally stays exact.
func (s *Store) Flush(ctx context.Context) error {
	if s.HoldCounters {
		return nil
	}
	return s.WriteCounters(ctx)
}

// WriteCounters writes the buffered counter increments, as Flush does, also when they are held.
func (s *Store) WriteCounters(ctx context.Context) error {
	s.mu.Lock()
	pending, hosts := s.pending, s.hosts
	s.pending, s.hosts = nil, nil
	s.mu.Unlock()
	var errs []error
	for key, hc := range hosts {
		if hc.local == 0 {
			continue
		}
		if _, err := s.t.Update(ctx, key, table.Update{Add: map[string]int64{attrPages: hc.local}}, table.Cond{}); err != nil {
			errs = append(errs, fmt.Errorf("count budget %s: %w", key, err)) // the guard is approximate
		}
	}
	for crawl, add := range pending {
		if _, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Add: add}, table.Cond{}); err != nil {
			errs = append(errs, fmt.Errorf("count crawl %s: %w", crawl, err))
			s.buffer(crawl, add)
		}
	}
	return errors.Join(errs...)
}

func (s *Store) buffer(crawl string, add map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string]map[string]int64{}
	}
	if s.pending[crawl] == nil {
		s.pending[crawl] = map[string]int64{}
	}
	for k, v := range add {
		s.pending[crawl][k] += v
	}
}

// Counters are a crawl's totals.
type Counters struct {
	Seen, Fetched, Skipped, Failed, ParseErrors int64
	Classes                                     map[errclass.Class]int64
}

// Pending is how many seen URLs have no terminal state yet.
func (c Counters) Pending() int64 { return c.Seen - c.Fetched - c.Skipped - c.Failed }

// Counters reads the crawl's totals (zero for an unknown crawl).
func (s *Store) Counters(ctx context.Context, crawl string) (Counters, error) {
	it, err := s.t.Get(ctx, CrawlKey(crawl))
	if errors.Is(err, table.ErrNotFound) {
		return Counters{Classes: map[errclass.Class]int64{}}, nil
	}
	if err != nil {
		return Counters{}, fmt.Errorf("read crawl %s: %w", crawl, err)
	}
	c := Counters{
		Seen: it.Int("seen"), Fetched: it.Int(string(Fetched)), Skipped: it.Int(string(Skipped)),
		Failed: it.Int(string(Failed)), ParseErrors: it.Int("parse_errors"), Classes: map[errclass.Class]int64{},
	}
	for _, cl := range errclass.All {
		if n := it.Int("class_" + string(cl)); n != 0 {
			c.Classes[cl] = n
		}
	}
	return c, nil
}

// Tally counts the crawl's URL items by state and class with a scan. Unlike Counters, which are
// updated beside each transition and may drift by one if the process dies between the two writes,
// Tally is exact; it reads every item, so it is for summaries at the end of a run, not for progress.
func (s *Store) Tally(ctx context.Context, crawl string) (Counters, error) {
	c := Counters{Classes: map[errclass.Class]int64{}}
	err := s.ScanURLs(ctx, crawl, func(u URL) error {
		c.Seen++
		switch u.State {
		case Fetched:
			c.Fetched++
		case Skipped:
			c.Skipped++
		case Failed:
			c.Failed++
		}
		if u.State.Terminal() && u.Class != "" {
			c.Classes[u.Class]++
		}
		return nil
	})
	if err != nil {
		return Counters{}, fmt.Errorf("tally crawl %s: %w", crawl, err)
	}
	counted, err := s.Counters(ctx, crawl)
	if err != nil {
		return Counters{}, err
	}
	c.ParseErrors = counted.ParseErrors
	for _, cl := range []errclass.Class{errclass.Parse, errclass.Poison} {
		if n := counted.Classes[cl]; n > 0 {
			c.Classes[cl] = n
		}
	}
	return c, nil
}
