package retry

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The recommended clamp for RetryAfter: a server may not make the crawler wait less than a
// second, nor keep a URL waiting more than an hour.
const (
	MinRetryAfter = time.Second
	MaxRetryAfter = time.Hour
)

// RetryAfter reads a Retry-After header value (RFC 9110 §10.2.3): delay-seconds or an
// HTTP-date. It returns the wait clamped to [min, max], and false for a missing, malformed or
// negative value. A date in the past, or "0", gives min; a wait it reports as ok is never 0
// (a min of 0 or less is raised to one second).
func RetryAfter(v string, now time.Time, min, max time.Duration) (time.Duration, bool) {
	if min <= 0 {
		min = time.Second
	}
	if max < min {
		max = min
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if isDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil || secs > int64(max/time.Second)+1:
			return max, true // too many seconds to represent: as long as allowed
		default:
			d = time.Duration(secs) * time.Second
		}
	} else {
		t, err := http.ParseTime(v)
		if err != nil {
			return 0, false
		}
		d = t.Sub(now)
	}
	return clamp(d, min, max), true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func clamp(d, min, max time.Duration) time.Duration {
	if d < min {
		return min
	}
	if d > max {
		return max
	}
	return d
}
