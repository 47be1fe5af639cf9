package fetcher_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// A host whose first requests fail twice in a row opens its circuit (WithCircuit's 2): the
// next URL of the host is re-queued to wait for the probe, with no request, no claim and no
// burned receive; once the probe is due the URL is sent as the probe, and its answer closes the
// circuit for every worker.
func TestAnOpenCircuitHoldsTheHostsURLsUntilAProbeAnswers(t *testing.T) {
	e := newEnv(t, nil, crawlstate.WithCircuit(2, time.Hour))
	host := strings.TrimPrefix(e.site.srv.URL, "http://")
	e.handle(e.record("msg-0", "/", 1)) // fetched before the host fails
	e.received(parseQ)
	e.handle(e.record("msg-1", "/busy", 1))
	if w := e.state.CircuitOpen(host); w != 0 {
		t.Fatalf("after one 503 the circuit waits %v, want it closed", w)
	}
	e.handle(e.record("msg-2", "/busy?again", 1))
	if w := e.state.CircuitOpen(host); w < 59*time.Minute {
		t.Fatalf("after two 503s in a row the circuit waits %v, want the probe interval", w)
	}
	e.received(fetchQ) // the two 503s' retries

	if got := e.handle(e.record("msg-3", "/about", 5)); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none: waiting for the circuit burns no receive", got)
	}
	m, delay, receives := e.requeued()
	if m.URL != e.url("/about") || m.Waits != 1 || m.Retries != 0 || receives != 1 {
		t.Errorf("re-queued %+v on receive %d, want the same URL with waits 1, on receive 1", m, receives)
	}
	if delay != queue.MaxDelay || time.Until(m.NotBefore) < 59*time.Minute {
		t.Errorf("re-queued with delay %v, not before %v; want SQS's longest delay, chained until the probe an hour on", delay, m.NotBefore)
	}
	if n := e.site.hitsOf("/about"); n != 0 {
		t.Errorf("%d requests for /about while the circuit was open, want 0", n)
	}
	if it := e.item("/about"); it.State != crawlstate.Queued || it.Lease.After(time.Now()) {
		t.Errorf("url = %+v, want queued and unclaimed", it)
	}

	// An hour later the probe is due. A message of a URL that is done already takes it and sends
	// nothing: it gives the probe back, and the next URL goes as the probe at once; its answer
	// closes the circuit.
	later := time.Now().Add(time.Hour + time.Minute)
	e.clock.set(later) // the handler's clock too (newEnv)
	if got := e.handle(e.record("msg-dup", "/", 1)); len(got) != 0 || e.site.hitsOf("/") != 1 {
		t.Errorf("a message of a URL done already: failures %v, %d requests for it; want it dropped without one", got, e.site.hitsOf("/"))
	}
	if got := e.handle(e.record("msg-4", "/about", 1)); len(got) != 0 {
		t.Errorf("BatchItemFailures = %v, want none", got)
	}
	if n := e.site.hitsOf("/about"); n != 1 {
		t.Errorf("%d requests for /about once the probe was due, want 1", n)
	}
	if it := e.item("/about"); it.State != crawlstate.Fetched {
		t.Errorf("the probe's url = %+v, want fetched", it)
	}
	other := crawlstate.New(e.urls, crawlstate.WithClock(e.clock.now))
	if _, err := other.ReserveSlots(context.Background(), host, time.Millisecond, 1, 0); err != nil {
		t.Fatal(err)
	}
	if w, _, err := other.CircuitWait(context.Background(), host); err != nil || w != 0 {
		t.Errorf("another worker's circuit waits %v, %v after the probe's answer; want it closed", w, err)
	}
}

// Two failed first requests in a row raise the host's gap for every worker (one does not: see
// TestAnOverloadedHostIsThrottled); the retries of one failing URL do not.
func TestFailuresInARowThrottleTheHost(t *testing.T) {
	e := newEnv(t, nil)
	host := strings.TrimPrefix(e.site.srv.URL, "http://")
	for i := range 3 {
		retry := e.record("msg-r"+itoa(i), "/busy", 1)
		retry.Body = strings.Replace(retry.Body, `"url"`, `"retries":`+itoa(i+1)+`,"url"`, 1)
		e.handle(retry)
	}
	if got := e.state.Throttled(host); got != 0 {
		t.Fatalf("after a URL's retries failed the host's gap is %v, want none", got)
	}
	e.handle(e.record("msg-1", "/busy?a", 1))
	e.handle(e.record("msg-2", "/busy?b", 1))
	if got := e.state.Throttled(host); got <= 0 {
		t.Errorf("after two failed first requests in a row the host's gap is %v, want it raised", got)
	}
}
