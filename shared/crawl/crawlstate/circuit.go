package crawlstate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A circuit per host, shared by every worker through the host's politeness slot item, beside its
// throttled gap (throttle.go). Failures of a host (no connection, a timeout, a 5xx) are counted
// in a row on the item (HostFailed); an answer clears the count (HostAnswered). When the count
// reaches the store's failures to open (WithCircuit) the circuit opens: the item holds the time
// of the next probe, and until then the host's URLs wait in their queue without a request
// (CircuitWait). At that time the first worker to ask takes the probe, with a conditional write
// that moves the next probe one probe interval (WithCircuit) on, and sends its request: an answer
// closes the circuit, a failure leaves it open until the next probe.
//
// Only a URL's first request counts towards the circuit and towards throttling for failures:
// its retries are its retry policy's business, and a healthy host with a few broken pages, each
// tried again a few times, is not a host that is down.

const (
	// DefaultCircuitFailures is how many failed first requests in a row open a host's circuit.
	DefaultCircuitFailures = 5
	// DefaultCircuitProbe is how long an open circuit waits before each probe.
	DefaultCircuitProbe = 30 * time.Second
	// SlowAnswer is the least time an answer must take to count as slow (see HostAnswered).
	SlowAnswer = time.Second
	// slowFactor is how many times slower than the host's usual answer a slow one is.
	slowFactor = 3
	// slowSamples is how many answers the usual time of a host's answers needs first.
	slowSamples = 3
	// slowRunToThrottle is how many slow answers in a row raise the host's gap: one alone is the
	// long tail that a healthy host's answer times have (the realistic web's lognormal times,
	// median 200 ms and 99th percentile 3 s, made about one answer in 15 slow, and each raise cost
	// the host's slot item and the crawl's notes up to seven writes, with the speed-ups after it).
	slowRunToThrottle = 2
	// failRunToThrottle is how many failed first requests in a row raise the host's gap.
	failRunToThrottle = 2
)

// On the slot item: the failed first requests in a row, and, while the circuit is open, when
// its next probe may go (Unix ms).
const (
	attrFails     = "fails"
	attrOpenUntil = "openUntil"
)

// circuit is a host's circuit as this store last saw it.
type circuit struct{ fails, until int64 }

// failuresToOpen is how many failed first requests in a row open a host's circuit.
func (s *Hosts) failuresToOpen() int64 {
	if s.circuitFailures == 0 {
		return DefaultCircuitFailures
	}
	return int64(s.circuitFailures)
}

// probeEvery is how long an open circuit waits before each probe.
func (s *Hosts) probeEvery() time.Duration {
	if s.circuitProbe <= 0 {
		return DefaultCircuitProbe
	}
	return s.circuitProbe
}

// learnCircuit keeps the circuit that the host's slot item holds; the item is whole, as every
// write and failed condition returns it.
func (s *Hosts) learnCircuit(host string, it table.Item) {
	if it == nil {
		return
	}
	c := circuit{fails: it.Int(attrFails), until: it.Int(attrOpenUntil)}
	if c == (circuit{}) {
		if _, had := s.circuits.Load(host); !had {
			return // keep the map to the hosts that ever failed
		}
	}
	s.circuits.Store(host, c)
}

func (s *Hosts) circuitOf(host string) circuit {
	v, ok := s.circuits.Load(host)
	if !ok {
		return circuit{}
	}
	return v.(circuit)
}

// CircuitOpen returns how long the host's URLs must still wait for its circuit's next probe, as
// this store last saw it (0: the circuit is closed, or its probe is due). It writes nothing.
func (s *Hosts) CircuitOpen(host string) time.Duration {
	c := s.circuitOf(host)
	if c.until == 0 {
		return 0
	}
	return max(time.UnixMilli(c.until).Sub(s.now()), 0)
}

// CircuitWait returns how long a URL of the host must wait for the host's circuit (0: send the
// request). A closed circuit costs nothing. An open one whose probe is due is taken by the first
// caller, with a conditional write that moves the next probe one probe interval on: that caller
// gets 0 and probe true, and sends the probe; the others wait for the next probe.
func (s *Hosts) CircuitWait(ctx context.Context, host string) (wait time.Duration, probe bool, err error) {
	c := s.circuitOf(host)
	if c.until == 0 {
		return 0, false, nil
	}
	now := s.now()
	if wait := time.UnixMilli(c.until).Sub(now); wait > 0 {
		return wait, false, nil
	}
	tok := randomTag()
	it, err := s.t.Update(ctx, slotKey(host), table.Update{Set: map[string]any{attrOpenUntil: now.Add(s.probeEvery()).UnixMilli(), attrSlotTok: tok}},
		table.And(table.Exists(attrOpenUntil), table.Lt(attrOpenUntil, now.UnixMilli()+1)))
	if cf, lost := table.IsConditionFailed(err); lost && ownSlotWrite(cf.Item, tok) {
		it, err = cf.Item, nil // its own take of the probe, sent again
	} else if lost {
		s.learn(host, cf.Item) // another worker took the probe, or an answer closed the circuit
		return s.CircuitOpen(host), false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("take the circuit probe of %s: %w", host, err)
	}
	s.learn(host, it)
	return 0, true, nil
}

// ReleaseProbe gives back the probe that CircuitWait gave this caller, which sends no request
// after all (its URL was done already, or must wait for its politeness slot): the next URL to ask
// takes it at once, rather than after the probe interval. Without it, messages of URLs that are
// done, each taking a probe in turn, would hold an open circuit open for as long as they keep
// coming.
func (s *Hosts) ReleaseProbe(ctx context.Context, host string) error {
	now := s.now().UnixMilli()
	it, err := s.t.Update(ctx, slotKey(host), table.Update{Set: map[string]any{attrOpenUntil: now}},
		table.And(table.Exists(attrOpenUntil), table.Gt(attrOpenUntil, now)))
	if cf, gone := table.IsConditionFailed(err); gone {
		s.learn(host, cf.Item) // closed by an answer meanwhile, or due already
		return nil
	}
	if err != nil {
		return fmt.Errorf("give back the circuit probe of %s: %w", host, err)
	}
	s.learn(host, it)
	return nil
}

// HostFailed notes a failed request to the host: no connection, a timeout or a 5xx. first says
// whether it was its URL's first request; only those count (see above). The second failure in a
// row raises the host's gap (SlowDownFor, Why5xx), as does each one after; the one that reaches
// the failures to open (WithCircuit) opens its circuit, noted for the crawl's summary and status
// unless crawl is "". It returns whether the circuit is open.
func (s *Hosts) HostFailed(ctx context.Context, crawl, host string, first bool, interval time.Duration) (bool, error) {
	if !first || s.circuitFailures < 0 {
		return s.CircuitOpen(host) > 0, nil
	}
	// The token makes the ADD's replay fail its condition, so that a failure counts once.
	tok := randomTag()
	it, err := s.t.Update(ctx, slotKey(host), table.Update{Add: map[string]int64{attrFails: 1}, Set: map[string]any{attrSlotTok: tok}},
		table.Ne(attrSlotTok, tok))
	if cf, again := table.IsConditionFailed(err); again {
		it, err = cf.Item, nil // its own count, sent again
	}
	if err != nil {
		return false, fmt.Errorf("count a failure of %s: %w", host, err)
	}
	s.learn(host, it)
	fails := it.Int(attrFails)
	if fails >= failRunToThrottle {
		if _, err := s.SlowDownFor(ctx, crawl, host, interval, Why5xx); err != nil {
			return false, err
		}
	}
	if fails < s.failuresToOpen() || it.Has(attrOpenUntil) {
		return it.Has(attrOpenUntil), nil
	}
	now := s.now()
	tok = randomTag()
	it, err = s.t.Update(ctx, slotKey(host), table.Update{Set: map[string]any{attrOpenUntil: now.Add(s.probeEvery()).UnixMilli(), attrSlotTok: tok}},
		table.NotExists(attrOpenUntil))
	if cf, opened := table.IsConditionFailed(err); opened && ownSlotWrite(cf.Item, tok) {
		it, err = cf.Item, nil // its own opening, sent again
	} else if opened {
		s.learn(host, cf.Item) // another worker opened it a moment ago
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("open the circuit of %s: %w", host, err)
	}
	s.learn(host, it)
	if crawl != "" {
		return true, s.noteCircuit(ctx, crawl, host, attrCircuitOpened, now)
	}
	return true, nil
}

// HostAnswered notes an answer of the host that is no failure (any but a 5xx or a 429) and the
// time it took; interval is the host's configured gap, without its throttled one (the gap the
// host goes back to). It writes only when there is something to change:
//   - a second slow answer in a row (slowFactor times slower than the host's usual, and at
//     least SlowAnswer), and each one after, raises its gap (SlowDownFor, WhySlow); the usual time
//     is this process's average of the host's answers, while the gap it raises is shared; one
//     slow answer alone changes nothing;
//   - otherwise it ends the host's run of failures and closes its circuit (noted for the crawl's
//     summary and status), and halves what is left of a throttled host's gap, once a second at
//     most, so that a host that answers well is soon back at its configured rate. A gap left no
//     wider than interval is left to decay by itself: the host's requests already go at interval,
//     and a write a page would change nothing but the item.
func (s *Hosts) HostAnswered(ctx context.Context, crawl, host string, took, interval time.Duration) error {
	switch slow, raise := s.answers.slow(host, took); {
	case raise:
		_, err := s.SlowDownFor(ctx, crawl, host, interval, WhySlow)
		return err
	case slow:
		return nil // one slow answer alone: neither a raise nor a good answer
	}
	if c := s.circuitOf(host); c != (circuit{}) {
		it, err := s.t.Update(ctx, slotKey(host), table.Update{Set: map[string]any{attrFails: 0}, Remove: []string{attrOpenUntil}}, table.Cond{})
		if err != nil {
			return fmt.Errorf("close the circuit of %s: %w", host, err)
		}
		s.learn(host, it)
		if c.until != 0 && crawl != "" {
			if err := s.noteCircuit(ctx, crawl, host, attrCircuitClosed, s.now()); err != nil {
				return err
			}
		}
	}
	return s.speedUp(ctx, host, interval)
}

// speedUp halves what is left of the host's throttled gap, unless it was set less than raiseEvery
// ago or is no wider than interval (the host goes at interval whatever it is). The write is a
// compare-and-swap on when the gap was set: a raise in between wins.
func (s *Hosts) speedUp(ctx context.Context, host string, interval time.Duration) error {
	v, ok := s.throttles.Load(host)
	if !ok {
		return nil
	}
	t, now := v.(throttle), s.now()
	left := t.left(now)
	if left <= interval || now.UnixMilli()-t.at < raiseEvery.Milliseconds() {
		return nil
	}
	it, err := s.t.Update(ctx, slotKey(host), table.Update{Set: map[string]any{attrSlowGap: (left / 2).Milliseconds(), attrSlowAt: now.UnixMilli()}},
		table.Eq(attrSlowAt, t.at))
	if cf, raced := table.IsConditionFailed(err); raced {
		s.learn(host, cf.Item)
		return nil
	}
	if err != nil {
		return fmt.Errorf("speed up %s: %w", host, err)
	}
	s.learn(host, it)
	return nil
}

// maxAnswerHosts bounds the hosts whose usual answer time a process keeps: a wide crawl meets
// millions. When it is reached the averages start again, each host's after slowSamples answers.
const maxAnswerHosts = 10_000

// answerTimes keeps the usual time of each host's answers in this process: a moving average.
type answerTimes struct {
	mu    sync.Mutex
	hosts map[string]*answerTime
}

type answerTime struct {
	avg time.Duration
	n   int
	// slowRun counts the slow answers in a row up to this one.
	slowRun int
}

// slow adds an answer's time to the host's average and tells whether it was slow, at least
// SlowAnswer and slowFactor times the average before it once the average has slowSamples
// answers, and whether it raises the host's gap: it ends a run of slowRunToThrottle slow answers
// or more. A slow answer moves the average less, so that a host that stays slow goes on being
// throttled only as its answers grow slower still.
func (a *answerTimes) slow(host string, took time.Duration) (slow, raise bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hosts == nil {
		a.hosts = map[string]*answerTime{}
	}
	h := a.hosts[host]
	if h == nil {
		if len(a.hosts) >= maxAnswerHosts {
			clear(a.hosts)
		}
		h = &answerTime{}
		a.hosts[host] = h
	}
	slow = h.n >= slowSamples && took >= SlowAnswer && took > slowFactor*h.avg
	weight := time.Duration(4)
	if slow {
		weight = 8
		h.slowRun++
	} else {
		h.slowRun = 0
	}
	if h.n == 0 {
		h.avg = took
	} else {
		h.avg += (took - h.avg) / weight
	}
	h.n++
	return slow, h.slowRun >= slowRunToThrottle
}
