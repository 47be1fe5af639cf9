package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawlstate"
)

// Throttled is a host whose gap between requests the crawl widened after its 429s (adaptive
// throttling, docs/operating.md), as a run's summary and crawl status show it.
type Throttled struct {
	Host string `json:"host"`
	// GapSeconds is the host's throttled gap now: 0 once it has decayed back to the configured rate.
	GapSeconds float64 `json:"gapSeconds"`
	// RaisedToSeconds is the gap the host's latest raise set, at RaisedAt.
	RaisedToSeconds float64   `json:"raisedToSeconds"`
	RaisedAt        time.Time `json:"raisedAt"`
	// Raises is how many times the crawl's workers widened the host's gap.
	Raises int64 `json:"raises"`
}

// maxThrottledLines bounds the throttled hosts a summary or status prints (--json has them all).
const maxThrottledLines = 10

// throttledOf are the crawl's throttled hosts as of now, the most recently raised first.
func throttledOf(hosts []crawlstate.ThrottledHost, now time.Time) []Throttled {
	out := make([]Throttled, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, Throttled{Host: h.Host, GapSeconds: h.Left(now).Seconds(), RaisedToSeconds: h.Gap.Seconds(),
			RaisedAt: h.RaisedAt.UTC(), Raises: h.Raises})
	}
	return out
}

// printThrottled writes the throttled hosts, a line each, indented under the summary or status.
func printThrottled(w io.Writer, hosts []Throttled) {
	if len(hosts) == 0 {
		return
	}
	more := ""
	if len(hosts) > maxThrottledLines {
		more = fmt.Sprintf(" (the %d most recent of %d)", maxThrottledLines, len(hosts))
	}
	fmt.Fprintf(w, "  hosts throttled after their 429s%s:\n", more)
	for _, h := range hosts[:min(len(hosts), maxThrottledLines)] {
		now := "back at its configured rate"
		if h.GapSeconds > 0 {
			now = fmt.Sprintf("gap now %s", roundGap(h.GapSeconds))
		}
		times := "once"
		if h.Raises > 1 {
			times = fmt.Sprintf("%d times", h.Raises)
		}
		fmt.Fprintf(w, "    %q  %s (widened %s, last to %s at %s)\n", h.Host, now, times, roundGap(h.RaisedToSeconds),
			h.RaisedAt.Format(time.TimeOnly))
	}
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
