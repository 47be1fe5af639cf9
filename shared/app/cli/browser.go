package cli

import (
	"log/slog"

	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
	"github.com/crawlstack/crawlstack/shared/handler/renderer"
)

// openBrowser returns the browser that renders the pages of crawls whose spec has a render
// section, from --chromium or CRAWL_CHROMIUM (path; "": look on PATH), and what closes it. It is
// Chromium (shared/crawl/web/render), started by the first page that renders: a run that renders
// nothing starts no browser. Without one, each render fails with render.ErrNoBrowser: the render
// step says so once a batch, and each page that was to render is parsed from its static HTML with
// the reason render/no-browser.
func openBrowser(path string, log *slog.Logger) (renderer.Browser, func()) {
	b := render.NewOnDemand(render.Options{Path: path})
	return b, func() {
		if err := b.Close(); err != nil {
			log.Warn("close the browser", "err", err)
		}
	}
}
