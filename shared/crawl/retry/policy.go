package retry

import (
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// Policy says how many requests a URL may take when they fail with a class, and how long it
// waits between them. The fetcher asks it for every failed request of a URL, counting the
// requests of earlier deliveries (carried in the fetch message), so that the number of tries
// and their spacing are the policy's, not the queue's visibility timeout and maxReceiveCount.
type Policy interface {
	// Attempts is the most requests a URL takes when they fail with class c (at least 1).
	Attempts(c errclass.Class) int
	// Delay is the wait after the nth failed request (n from 1) of class c.
	Delay(c errclass.Class, n int) time.Duration
	// Limits reports whether the policy bounds class c's tries; a class it does not (a backend
	// failure) is left to the queue's redelivery and dead-letter queue.
	Limits(c errclass.Class) bool
}

// Tries is the default Policy: at most Max requests for a class that may succeed when tried
// again (errclass.Retryable, robots.txt down included), and at most Timeouts for a timeout; the
// waits First, then each Factor times the one before, at most Last; one request for any other
// class.
type Tries struct {
	Max int
	// Timeouts bounds the requests of a URL whose requests time out (0: Max; never more than
	// Max). A timed-out request holds a fetch invocation for the whole fetch timeout, so each
	// one costs as much Lambda time as a few dozen pages (docs/cost.md, "Timeouts").
	Timeouts    int
	First, Last time.Duration
	Factor      float64
	// Unlimited are the classes the policy leaves to the queue: backend failures, which SQS
	// delivers again and, after maxReceiveCount receives, moves to the DLQ.
	Unlimited []errclass.Class
}

// DefaultPolicy returns the crawler's policy: at most 4 requests for http_5xx, http_429 and
// connect (and a robots.txt that is down), and DefaultTimeoutTries for a timeout, waiting 2 s,
// 8 s and 30 s between them; a backend failure (class internal) is left to the queue: SQS
// delivers it again, and after maxReceiveCount receives it moves to the DLQ.
func DefaultPolicy() Tries {
	return Tries{Max: 4, Timeouts: DefaultTimeoutTries, First: 2 * time.Second, Last: 30 * time.Second, Factor: 4,
		Unlimited: []errclass.Class{errclass.Internal}}
}

// DefaultTimeoutTries is how many requests a URL whose requests time out takes by default: a
// second chance for a stall, not three more fetch timeouts of Lambda time.
const DefaultTimeoutTries = 2

// Attempts implements Policy.
func (p Tries) Attempts(c errclass.Class) int {
	if !errclass.Retryable(c) && c != errclass.RobotsUnavailable {
		return 1
	}
	if c == errclass.Timeout && p.Timeouts > 0 {
		return max(min(p.Timeouts, p.Max), 1)
	}
	return max(p.Max, 1)
}

// Delay implements Policy.
func (p Tries) Delay(_ errclass.Class, n int) time.Duration {
	d := float64(p.First)
	for range max(n-1, 0) {
		d *= max(p.Factor, 1)
		if time.Duration(d) >= p.Last {
			return p.Last
		}
	}
	return min(time.Duration(d), p.Last)
}

// Limits implements Policy.
func (p Tries) Limits(c errclass.Class) bool {
	for _, u := range p.Unlimited {
		if u == c {
			return false
		}
	}
	return true
}

// PolicyBackOff is the backoff of one URL's requests under a Policy: after each failed request
// (Failed, with its class) it gives the policy's wait, and backoff.Stop once the URL has taken
// the policy's requests for that class. Made counts the requests so far, those of earlier
// deliveries included.
type PolicyBackOff struct {
	P     Policy
	Made  int
	class errclass.Class
}

// Failed records a failed request of class c.
func (b *PolicyBackOff) Failed(c errclass.Class) { b.Made, b.class = b.Made+1, c }

// Spent reports whether the URL has taken every request the policy allows for the last class.
func (b *PolicyBackOff) Spent() bool { return b.Made >= b.P.Attempts(b.class) }

// NextBackOff implements backoff.BackOff.
func (b *PolicyBackOff) NextBackOff() time.Duration {
	if b.Spent() {
		return backoff.Stop
	}
	return b.P.Delay(b.class, b.Made)
}

// Reset implements backoff.BackOff; the count of requests is the URL's and is kept.
func (b *PolicyBackOff) Reset() {}

// GiveUpAfter is the longest a URL whose requests keep failing with class c takes under p, when
// each request takes at most perTry: its requests and the waits between them (the queue's own
// delivery delays left out).
func GiveUpAfter(p Policy, c errclass.Class, perTry time.Duration) time.Duration {
	n := p.Attempts(c)
	total := time.Duration(n) * perTry
	for i := 1; i < n; i++ {
		total += p.Delay(c, i)
	}
	return total
}
