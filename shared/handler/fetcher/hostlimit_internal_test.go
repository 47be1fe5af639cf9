package fetcher

import (
	"context"
	"testing"
	"time"
)

// A host's bound of one holds a second fetch of the host until the first releases its place,
// while another bound of the same host (another crawl's host rule) and another host go on.
func TestHostLimiterBoundsEachHostByItsRule(t *testing.T) {
	var l hostLimiter
	ctx := context.Background()
	release, err := l.acquire(ctx, "a:80", 1)
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel() // a full place fails at once: only the cancelled context is ready
	// A place that is free is taken at once; a bug that blocks fails at the deadline.
	guard, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if _, err := l.acquire(done, "a:80", 1); err == nil {
		t.Fatal("a second fetch of a host bound to one took a place")
	}
	for _, other := range []struct {
		host string
		max  int
	}{{"a:80", 2}, {"b:80", 1}, {"a:80", 0}} {
		r, err := l.acquire(guard, other.host, other.max)
		if err != nil {
			t.Errorf("%s bound %d: %v", other.host, other.max, err)
			continue
		}
		r()
	}
	release()
	r, err := l.acquire(guard, "a:80", 1)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	r()
}
