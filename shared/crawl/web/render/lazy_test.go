package render_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
	"github.com/crawlstack/crawlstack/shared/demo/jssite"
)

// An OnDemand starts no browser until a render needs one, then renders as a Chromium does; a
// browser that cannot start fails each render with ErrNoBrowser; after Close renders fail.
func TestOnDemandStartsTheBrowserAtTheFirstRender(t *testing.T) {
	sharedBrowser(t) // skips, or fails, as the other tests do without a browser
	t.Run("missing browser", func(t *testing.T) {
		o := render.NewOnDemand(render.Options{Path: "/nonexistent/chromium"})
		for range 2 {
			if _, err := o.Render(context.Background(), render.Request{}); !errors.Is(err, render.ErrNoBrowser) {
				t.Errorf("render: %v: want ErrNoBrowser", err)
			}
		}
		if o.Started() || o.Close() != nil {
			t.Error("a browser that never started: want not started and a clean Close")
		}
	})
	t.Run("renders", func(t *testing.T) {
		o := render.NewOnDemand(render.Options{})
		if o.Started() {
			t.Fatal("started before any render")
		}
		site := jssite.New(jssite.Options{Pages: 2})
		defer site.Close()
		l := newLoader(t)
		for i := range site.Pages() {
			res, err := o.Render(context.Background(), render.Request{Page: render.Page{URL: site.PageURL(i), Body: site.HTML(i)},
				Wait: render.Wait{Selector: "#rendered"}, Loader: l})
			if err != nil || !strings.Contains(string(res.DOM), jssite.Text(i)) {
				t.Errorf("page %d: %v, DOM:\n%s", i, err, res.DOM)
			}
		}
		if !o.Started() {
			t.Error("not started after a render")
		}
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Render(context.Background(), render.Request{Page: render.Page{URL: site.PageURL(0), Body: site.HTML(0)},
			Loader: l}); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("render after Close: %v: want it refused", err)
		}
	})
}
