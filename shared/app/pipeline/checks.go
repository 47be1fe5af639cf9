package pipeline

import (
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/specstore"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/local/handoff"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// What the wiring gives each handler and the frontier satisfies the interfaces they declare. The
// handlers name no implementation; here, where the two meet, the compiler holds them together.
var (
	_ scheduler.Admitter = (*frontier.Frontier)(nil)
	_ scheduler.Starts   = (*frontier.Frontier)(nil)
	_ scheduler.Checks   = (*finish.Checker)(nil)
	_ scheduler.Links    = (*crawlstate.Store)(nil)
	_ scheduler.Blobs    = blob.Store(nil)

	_ parser.Parsed        = (*crawlstate.Store)(nil)
	_ parser.Counters      = (*crawlstate.Store)(nil)
	_ parser.Blobs         = blob.Store(nil)
	_ parser.PriorRecords  = blob.Store(nil)
	_ parser.CrawlSettings = (*specstore.Store)(nil)
	_ parser.Handoff       = (*handoff.Pages)(nil)

	_ fetcher.Claims        = (*crawlstate.Store)(nil)
	_ fetcher.Outcomes      = (*crawlstate.Store)(nil)
	_ fetcher.URLStates     = (*crawlstate.Store)(nil)
	_ fetcher.PageBudget    = (*crawlstate.Store)(nil)
	_ fetcher.Politeness    = (*crawlstate.Store)(nil)
	_ fetcher.Circuits      = (*crawlstate.Store)(nil)
	_ fetcher.HostHealth    = (*crawlstate.Store)(nil)
	_ fetcher.Runs          = (*crawlstate.Store)(nil)
	_ fetcher.Flusher       = (*crawlstate.Store)(nil)
	_ fetcher.Getter        = telemetry.Fetches{}
	_ fetcher.RobotsChecker = (*robots.Cache)(nil)
	_ fetcher.ScopeChecker  = scope.Rules{}
	_ fetcher.URLGuard      = (*netguard.Guard)(nil)
	_ fetcher.PageStore     = blob.Store(nil)
	_ fetcher.CrawlSettings = (*specstore.Store)(nil)
	_ fetcher.OptOuts       = (*optout.Matcher)(nil)
	_ fetcher.Handoff       = (*handoff.Pages)(nil)

	_ frontier.Admissions    = (*crawlstate.Store)(nil)
	_ frontier.Skips         = (*crawlstate.Store)(nil)
	_ frontier.Gates         = (*crawlstate.Store)(nil)
	_ frontier.PageBudget    = (*crawlstate.Store)(nil)
	_ frontier.Counters      = (*crawlstate.Store)(nil)
	_ frontier.Slots         = (*crawlstate.Store)(nil)
	_ frontier.Starts        = (*crawlstate.Store)(nil)
	_ frontier.CrawlSettings = (*specstore.Store)(nil)
	_ frontier.OptOuts       = (*optout.Matcher)(nil)
)
