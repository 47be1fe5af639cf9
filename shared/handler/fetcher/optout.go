package fetcher

import (
	"context"
	"fmt"
	"net/url"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
)

// OptOuts tells whether a URL is on the opt-out list (optout.Matcher). Schedule checks it at
// admission; fetch checks it again before each request and each redirect hop, so that a URL
// admitted before its entry was added (or a purge's tombstone) is not fetched either. The
// Matcher reads the list once per process every optout.RefreshEvery: nothing per URL.
type OptOuts interface {
	OptedOut(ctx context.Context, u *url.URL) (optout.Entry, bool, error)
}

// optedOut returns the error that ends u skipped, class opted_out, when it is on the list; an
// error of another class when the list cannot be read (the message is delivered again: no URL is
// fetched unchecked); nil otherwise.
func (h *Handler) optedOut(ctx context.Context, u *url.URL) error {
	if h.optOuts == nil {
		return nil
	}
	e, out, err := h.optOuts.OptedOut(ctx, u)
	if err != nil {
		return fmt.Errorf("check the opt-out list: %w", err)
	}
	if out {
		return errclass.Errorf(errclass.OptedOut, "on the opt-out list (%s %s)", e.Kind, e.Value)
	}
	return nil
}
