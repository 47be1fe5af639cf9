package main

import (
	"net/http"
	"sort"
	"sync"
	"time"
)

// tracker wraps the site's handler and keeps when each request began and ended, so the benchmark
// can tell how many fetches a crawler had in flight over its run, seen from the site.
type tracker struct {
	next  http.Handler
	start time.Time // the child process's start; times are kept relative to it

	mu    sync.Mutex
	spans []span
}

// span is one request, from its arrival to the end of its handler.
type span struct{ from, to time.Duration }

func newTracker(next http.Handler) *tracker { return &tracker{next: next, start: time.Now()} }

func (t *tracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	from := time.Since(t.start)
	t.next.ServeHTTP(w, r)
	to := time.Since(t.start)
	t.mu.Lock()
	t.spans = append(t.spans, span{from, to})
	t.mu.Unlock()
}

// restart makes the child's start now: call it just before the child starts.
func (t *tracker) restart() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start, t.spans = time.Now(), nil
}

// timelineSlices is how many equal parts of a crawl the timeline gives the fetches in flight for.
const timelineSlices = 10

// timeline is how a crawl used its fetches in flight, seen from the site.
type timeline struct {
	// First is the time from the child's start to the first request; Tail from the end of the
	// last response to the child's end (both in seconds).
	First, Tail float64
	// InFlight is the mean number of requests in flight from the first request to the end of the
	// last; Full the share of that time with at least the crawl's concurrency in flight (percent).
	InFlight, Full float64
	// Slices is the mean in flight in each tenth of that time.
	Slices [timelineSlices]float64
	// RSS is the child's highest resident set sampled in each tenth of its run, in MiB.
	RSS [timelineSlices]float64
}

// timeline returns the crawl's timeline; end is the child's run time, concurrency its fetches in
// flight at most.
func (t *tracker) timeline(end time.Duration, concurrency int) timeline {
	t.mu.Lock()
	spans := append([]span(nil), t.spans...)
	t.mu.Unlock()
	if len(spans) == 0 {
		return timeline{}
	}
	// Sweep the starts and ends in order, integrating the count in flight.
	type event struct {
		at    time.Duration
		delta int
	}
	events := make([]event, 0, 2*len(spans))
	for _, s := range spans {
		events = append(events, event{s.from, 1}, event{s.to, -1})
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].at != events[j].at {
			return events[i].at < events[j].at
		}
		return events[i].delta < events[j].delta // an end before a start at the same instant
	})
	first, last := events[0].at, events[len(events)-1].at
	var tl timeline
	tl.First = first.Seconds()
	if end > last {
		tl.Tail = (end - last).Seconds()
	}
	width := last - first
	if width <= 0 {
		return tl
	}
	slice := width / timelineSlices
	var area [timelineSlices]float64 // request-seconds in each slice
	var full time.Duration
	n := 0
	for i := 0; i+1 < len(events); i++ {
		n += events[i].delta
		from, to := events[i].at, events[i+1].at
		if to <= from {
			continue
		}
		if n >= concurrency {
			full += to - from
		}
		// Spread the interval's request-seconds over the slices it covers.
		for from < to {
			k := min(int((from-first)/max(slice, 1)), timelineSlices-1)
			sliceEnd := first + time.Duration(k+1)*slice
			if k == timelineSlices-1 {
				sliceEnd = to
			}
			part := min(to, sliceEnd) - from
			area[k] += float64(n) * part.Seconds()
			from += part
		}
	}
	var total float64
	for k := range area {
		total += area[k]
		tl.Slices[k] = area[k] / slice.Seconds()
	}
	tl.InFlight = total / width.Seconds()
	tl.Full = 100 * full.Seconds() / width.Seconds()
	return tl
}
