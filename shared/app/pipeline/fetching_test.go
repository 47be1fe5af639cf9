package pipeline

import "testing"

// The Fetching given in the ports is fetch's, not a new one (its robots.txt cache too:
// TestTheSeedsRobotsTxtIsFetchedOnceWhileTheStateOpens in shared/app/cli sees one request per host).
func TestNewUsesTheFetchingGiven(t *testing.T) {
	cfg := DefaultConfig()
	fx, err := NewFetching(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewOnly(cfg, Ports{Fetching: fx}, nil, Fetch)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.http != fx.client {
		t.Error("fetch got an HTTP client of its own, not the Fetching's")
	}
	alone, err := NewOnly(cfg, Ports{}, nil, Fetch)
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	if alone.http == nil || alone.http == fx.client {
		t.Error("without a Fetching, fetch must make its own client")
	}
}
