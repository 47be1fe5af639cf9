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
// Each gets the narrowest part of the crawl state that serves it: the URLs, the Hosts or the Runs
// of crawlstate; finish.Checker, which reads a crawl's items and writes its crawl item, gets the
// whole Store.
var (
	_ scheduler.Admitter = (*frontier.Frontier)(nil)
	_ scheduler.Starts   = (*frontier.Frontier)(nil)
	_ scheduler.Checks   = (*finish.Checker)(nil)
	_ scheduler.Links    = (*crawlstate.URLs)(nil)
	_ scheduler.Blobs    = blob.Store(nil)

	_ finish.State = (*crawlstate.Store)(nil)

	_ parser.Parsed        = (*crawlstate.URLs)(nil)
	_ parser.Counters      = (*crawlstate.Runs)(nil)
	_ parser.Blobs         = blob.Store(nil)
	_ parser.PriorRecords  = blob.Store(nil)
	_ parser.CrawlSettings = (*specstore.Store)(nil)
	_ parser.Handoff       = (*handoff.Pages)(nil)

	_ fetcher.Claims        = (*crawlstate.URLs)(nil)
	_ fetcher.Outcomes      = (*crawlstate.URLs)(nil)
	_ fetcher.URLStates     = (*crawlstate.URLs)(nil)
	_ fetcher.PageBudget    = (*crawlstate.Runs)(nil)
	_ fetcher.Politeness    = (*crawlstate.Hosts)(nil)
	_ fetcher.Circuits      = (*crawlstate.Hosts)(nil)
	_ fetcher.HostHealth    = (*crawlstate.Hosts)(nil)
	_ fetcher.Runs          = (*crawlstate.Runs)(nil)
	_ fetcher.Flusher       = (*crawlstate.Runs)(nil)
	_ fetcher.Getter        = telemetry.Fetches{}
	_ fetcher.RobotsChecker = (*robots.Cache)(nil)
	_ fetcher.ScopeChecker  = scope.Rules{}
	_ fetcher.URLGuard      = (*netguard.Guard)(nil)
	_ fetcher.PageStore     = blob.Store(nil)
	_ fetcher.CrawlSettings = (*specstore.Store)(nil)
	_ fetcher.OptOuts       = (*optout.Matcher)(nil)
	_ fetcher.Handoff       = (*handoff.Pages)(nil)

	_ frontier.Admissions    = (*crawlstate.URLs)(nil)
	_ frontier.Skips         = (*crawlstate.URLs)(nil)
	_ frontier.Gates         = (*crawlstate.Runs)(nil)
	_ frontier.PageBudget    = (*crawlstate.Runs)(nil)
	_ frontier.Counters      = (*crawlstate.Runs)(nil)
	_ frontier.Slots         = (*crawlstate.Hosts)(nil)
	_ frontier.Starts        = (*crawlstate.Runs)(nil)
	_ frontier.CrawlSettings = (*specstore.Store)(nil)
	_ frontier.OptOuts       = (*optout.Matcher)(nil)
)
