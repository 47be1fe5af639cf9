package pipeline

import (
	"strings"
	"testing"
)

// TestTheSlowLaneRequeuesToItsOwnQueue: the slow lane's fetch handler sends what it re-queues to
// the lane's queue, fetch's to fetch's, and schedule sends runs to the lane; without the lane's
// queue, the lane's handler is refused with the variable to set.
func TestTheSlowLaneRequeuesToItsOwnQueue(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlowQueue = "fetchslow"
	if got := fetcherConfigOf(cfg, FetchSlow).FetchQueue; got != "fetchslow" {
		t.Errorf("the slow lane re-queues to %q, want its own queue", got)
	}
	if got := fetcherConfigOf(cfg, Fetch).FetchQueue; got != "fetch" {
		t.Errorf("fetch re-queues to %q, want fetch", got)
	}
	h, err := NewOnly(cfg, Ports{}, nil, FetchSlow)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.FetchSlow == nil || h.Fetch != nil || h.Schedule != nil {
		t.Errorf("NewOnly(FetchSlow) built fetchslow %v, fetch %v, schedule %v; want the lane's handler alone",
			h.FetchSlow != nil, h.Fetch != nil, h.Schedule != nil)
	}
	_, err = NewOnly(DefaultConfig(), Ports{}, nil, FetchSlow)
	if err == nil || !strings.Contains(err.Error(), "FETCHSLOW_QUEUE_URL") {
		t.Errorf("the slow lane without its queue: %v, want an error naming FETCHSLOW_QUEUE_URL", err)
	}
	env := map[string]string{"SCHEDULE_QUEUE_URL": "s", "FETCH_QUEUE_URL": "f", "PARSE_QUEUE_URL": "p", "FETCHSLOW_QUEUE_URL": "fs"}
	got, err := FromEnv(func(k string) string { return env[k] })
	if err != nil || got.SlowQueue != "fs" {
		t.Errorf("FromEnv: SlowQueue %q, %v; want FETCHSLOW_QUEUE_URL's", got.SlowQueue, err)
	}
}
