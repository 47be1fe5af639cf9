package fetcher_test

import (
	"encoding/json"
	"strconv"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func itoa(n int) string { return strconv.Itoa(n) }

// withState gives d the crawl state s for each of the capabilities the handler takes of it.
func withState(s *crawlstate.Store, d fetcher.Deps) fetcher.Deps {
	d.Claims, d.Outcomes, d.URLs, d.PageBudget = s, s, s, s
	d.Politeness, d.Circuits, d.HostHealth, d.Runs, d.Counters = s, s, s, s, s
	return d
}
