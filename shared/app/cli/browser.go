package cli

import (
	"log/slog"

	"github.com/crawlstack/crawlstack/shared/handler/renderer"
)

// openBrowser returns the browser that renders the pages of crawls whose spec has a render
// section, from --chromium or CRAWL_CHROMIUM (path; "": look on PATH), and what closes it. The
// Chromium browser (shared/crawl/web/render) plugs in here. Until it does, there is none: the
// render step says so once a batch, and each page that was to render is parsed from its static
// HTML with the reason render/no-browser.
func openBrowser(path string, log *slog.Logger) (renderer.Browser, func()) {
	reason := "this build of crawl has no Chromium driver yet"
	if path != "" {
		reason += " (--chromium " + path + " is not used)"
	}
	return renderer.NoBrowser{Reason: reason}, func() {}
}
