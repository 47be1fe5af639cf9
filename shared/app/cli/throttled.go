package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// Throttled is a host whose gap between requests the crawl widened after its 429s, its failures in
// a row or its slow answers (adaptive throttling, docs/operating.md), as a run's summary and crawl
// status show it.
type Throttled struct {
	Host string `json:"host"`
	// GapSeconds is the host's throttled gap now: 0 once it has decayed back to the configured rate.
	GapSeconds float64 `json:"gapSeconds"`
	// RaisedToSeconds is the gap the host's latest raise set, at RaisedAt.
	RaisedToSeconds float64   `json:"raisedToSeconds"`
	RaisedAt        time.Time `json:"raisedAt"`
	// Raises is how many times the crawl's workers widened the host's gap.
	Raises int64 `json:"raises"`
	// Why is the reason of the latest raise: "429", "5xx" (failures in a row: 5xx, timeouts, no
	// connection) or "slow" (answers much slower than the host's usual).
	Why string `json:"why"`
}

// Circuit is a host whose circuit the crawl opened after its failures in a row: its URLs waited
// without a request until a probe answered (docs/safety.md).
type Circuit struct {
	Host string `json:"host"`
	// Open tells whether the circuit is still open: no probe has answered since it opened.
	Open bool `json:"open"`
	// Opens is how many times the crawl opened it.
	Opens    int64     `json:"opens"`
	OpenedAt time.Time `json:"openedAt"`
	// ClosedAt is when a probe's answer last closed it (absent: never).
	ClosedAt *time.Time `json:"closedAt,omitempty"`
}

// circuitsOf are the crawl's hosts whose circuit opened, the most recently opened first.
func circuitsOf(hosts []crawlstate.CircuitHost) []Circuit {
	out := make([]Circuit, 0, len(hosts))
	for _, h := range hosts {
		c := Circuit{Host: h.Host, Open: h.Open(), Opens: h.Opens, OpenedAt: h.OpenedAt.UTC()}
		if !h.ClosedAt.IsZero() {
			closed := h.ClosedAt.UTC()
			c.ClosedAt = &closed
		}
		out = append(out, c)
	}
	return out
}

// printCircuits writes the hosts whose circuit opened, a line each, indented under the summary or
// status.
func printCircuits(w io.Writer, hosts []Circuit) {
	printHosts(w, "hosts whose circuit opened after failures in a row", hosts, func(h Circuit) string {
		now := "open: its URLs wait for a probe to answer"
		if !h.Open && h.ClosedAt != nil {
			now = "closed by a probe's answer at " + h.ClosedAt.Format(time.TimeOnly)
		}
		return fmt.Sprintf("%q  %s (opened %s, last at %s)", h.Host, now, timesOf(h.Opens), h.OpenedAt.Format(time.TimeOnly))
	})
}

// printHosts writes a header and a line for each of the first maxThrottledLines hosts (none: not
// even the header), indented under the summary or status.
func printHosts[T any](w io.Writer, header string, hosts []T, line func(T) string) {
	if len(hosts) == 0 {
		return
	}
	more := ""
	if len(hosts) > maxThrottledLines {
		more = fmt.Sprintf(" (the %d most recent of %d)", maxThrottledLines, len(hosts))
	}
	fmt.Fprintf(w, "  %s%s:\n", header, more)
	for _, h := range hosts[:min(len(hosts), maxThrottledLines)] {
		fmt.Fprintf(w, "    %s\n", line(h))
	}
}

// openNow counts the hosts whose circuit is open.
func openNow(hosts []Circuit) int {
	n := 0
	for _, h := range hosts {
		if h.Open {
			n++
		}
	}
	return n
}

// timesOf is "once" or "n times".
func timesOf(n int64) string {
	if n > 1 {
		return fmt.Sprintf("%d times", n)
	}
	return "once"
}

// whyThrottled says what a raise's reason means, for a line of text.
func whyThrottled(why string) string {
	switch why {
	case crawlstate.Why5xx:
		return "failures in a row"
	case crawlstate.WhySlow:
		return "slow answers"
	}
	return "429s"
}

// maxThrottledLines bounds the throttled hosts a summary or status prints (--json has them all).
const maxThrottledLines = 10

// throttledOf are the crawl's throttled hosts as of now, the most recently raised first.
func throttledOf(hosts []crawlstate.ThrottledHost, now time.Time) []Throttled {
	out := make([]Throttled, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, Throttled{Host: h.Host, GapSeconds: h.Left(now).Seconds(), RaisedToSeconds: h.Gap.Seconds(),
			RaisedAt: h.RaisedAt.UTC(), Raises: h.Raises, Why: h.Why})
	}
	return out
}

// printThrottled writes the throttled hosts, a line each, indented under the summary or status.
func printThrottled(w io.Writer, hosts []Throttled) {
	printHosts(w, "hosts throttled after their 429s, failures in a row or slow answers", hosts, func(h Throttled) string {
		now := "back at its configured rate"
		if h.GapSeconds > 0 {
			now = fmt.Sprintf("gap now %s", roundGap(h.GapSeconds))
		}
		return fmt.Sprintf("%q  %s (widened %s, last to %s at %s, after %s)", h.Host, now, timesOf(h.Raises), roundGap(h.RaisedToSeconds),
			h.RaisedAt.Format(time.TimeOnly), whyThrottled(h.Why))
	})
}

// roundGap is a gap in seconds as a duration to the tenth of a second ("1.2s", "30s").
func roundGap(secs float64) time.Duration {
	return time.Duration(secs * float64(time.Second)).Round(100 * time.Millisecond)
}

// slowedNow counts the hosts still throttled: their gap has not decayed away.
func slowedNow(hosts []Throttled) int {
	n := 0
	for _, h := range hosts {
		if h.GapSeconds > 0 {
			n++
		}
	}
	return n
}
