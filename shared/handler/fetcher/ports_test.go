package fetcher_test

import (
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/specstore"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
	"github.com/crawlstack/crawlstack/shared/local/fileblob"
	"github.com/crawlstack/crawlstack/shared/local/handoff"
)

// The adapters the pipeline gives the handler (shared/app/pipeline) implement its ports; the
// handler does not import them.
var (
	_ fetcher.ScopeChecker   = scope.Rules{}
	_ fetcher.URLGuard       = (*netguard.Guard)(nil)
	_ fetcher.PageStore      = (*fileblob.Store)(nil)
	_ fetcher.DeferredPutter = (*fileblob.Store)(nil)
	_ fetcher.Handoff        = (*handoff.Pages)(nil)
	_ fetcher.CrawlSettings  = (*specstore.Store)(nil)
)
