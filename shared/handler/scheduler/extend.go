package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"
	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// A growing seed file extends its crawl. A new version of a URL list whose last crawl (the seed
// file's pointer, previous.go) has not ended sends its seeds into that crawl: the crawl keeps its
// id, admission drops the URLs it has already, and only the new ones are fetched. A version that
// begins with the bytes of the one read before it (lines appended) is read on from where that one
// ended; any other is read whole, and admission drops its repeats. URLs taken out of the file stay
// in the crawl. A spec always starts a crawl of its own (its settings may differ), and so does a
// new version of a file whose last crawl has ended (a recrawl of it, previous.go).
//
// The crawl's checks must not decide its end while the new seeds are on their way: the extension
// is marked on the crawl item, and each chunk's Links messages are named before they are sent
// (crawlstate/extend.go gives the argument).

// Extender marks a crawl's extensions (crawlstate.Runs).
type Extender interface {
	BeginExtension(ctx context.Context, crawl, version string) (crawlstate.Extension, error)
	EndExtension(ctx context.Context, crawl, version string) error
}

// errStillReading is the answer to a new version of a seed file whose crawl is still reading an
// earlier one: it is delivered again once that reading has ended.
var errStillReading = errors.New("the crawl is still reading an earlier version of its seed file")

// extendRunning takes the version src of a URL list, whose own crawl would be crawl, into the
// file's running crawl when it has one (extendCrawl): true when it did, or had nothing to do.
func (h *Handler) extendRunning(ctx context.Context, src seedSource, crawl string, body []byte) (bool, error) {
	target, err := h.extendTarget(ctx, src, crawl)
	if err != nil || target == "" {
		return false, err
	}
	return h.extendCrawl(ctx, src, target, body)
}

// extendTarget returns the crawl that the seed file src, a URL list whose version would start
// crawl, extends: its last crawl, when that is another crawl; "" when the version starts crawl.
func (h *Handler) extendTarget(ctx context.Context, src seedSource, crawl string) (string, error) {
	if h.extend == nil || h.progress == nil || src.version == "" {
		return "", nil
	}
	l, ok, err := h.latestOf(ctx, src.key)
	if err != nil || !ok || l.Crawl == crawl {
		return "", err
	}
	return l.Crawl, nil
}

// extendCrawl takes the version src of a seed file into its running crawl. It returns false when
// the crawl has ended: the version then starts a crawl of its own, unless it was taken in before
// the end (a notification delivered again), which does nothing.
func (h *Handler) extendCrawl(ctx context.Context, src seedSource, crawl string, body []byte) (bool, error) {
	// Asked before the crawl is marked: a mark left by a version that must wait would hold the
	// crawl's end for as long as it waits.
	if err := h.readingEnded(ctx, crawl, src.version); errors.Is(err, errSpecCrawl) {
		return false, nil
	} else if err != nil {
		return true, err
	}
	ext, err := h.extend.BeginExtension(ctx, crawl, src.version)
	switch {
	case errors.Is(err, crawlstate.ErrUnknownCrawl):
		return false, nil // its pointer names a crawl gone (erased): start one
	case err != nil:
		return true, err
	case ext.Ended && ext.Progress.Version == src.version:
		h.log.Info("a seed file version taken into its crawl before the crawl ended: nothing to do", "crawl", crawl, "seedFile", src.key)
		return true, nil
	case ext.Ended:
		return false, nil
	}
	cp := ext.Progress
	if cp.Version != src.version {
		from := crawlstate.SeedProgress{Version: src.version}
		if cp.Digest != "" && int64(len(body)) >= cp.Offset && digest(body[:cp.Offset]) == cp.Digest {
			from.Offset, from.Line, from.Accepted, from.Errors = cp.Offset, cp.Line, cp.Accepted, cp.Errors
		}
		ok, err := h.progress.SaveSeedProgress(ctx, crawl, cp, from)
		if err != nil || !ok {
			return true, err // !ok: another delivery of this version is ahead
		}
		h.log.Info("seed file changed while its crawl runs: the crawl takes in its new version", "crawl", crawl,
			"seedFile", src.key, "fromLine", from.Line+1, "appended", from.Offset > 0)
		cp = from
	}
	report := newReport(crawl, src.key)
	report.ExtendedBy = src.version
	done, err := h.readChunks(ctx, src, crawl, body, &report, cp, true)
	if err != nil || !done {
		return true, err
	}
	if err := h.extend.EndExtension(ctx, crawl, src.version); err != nil {
		return true, err
	}
	if err := h.writeReport(ctx, report); err != nil {
		return true, err
	}
	if h.checks != nil {
		if err := h.checks.Begin(ctx, crawl); err != nil { // a stalled crawl's checks go on
			return true, err
		}
	}
	h.log.Info("crawl extended by its seed file", "crawl", crawl, "seedFile", src.key, "seeds", report.Accepted, "badLines", report.Errors)
	return true, nil
}

// errSpecCrawl is readingEnded's answer for a crawl started by a spec: a URL list of the same key
// starts a crawl of its own (the spec's settings are not the list's).
var errSpecCrawl = errors.New("the crawl was started by a spec")

// readingEnded returns errStillReading while the crawl reads an earlier version of its seed file
// in chunks: one with no digest of the file read whole (crawlstate.SeedProgress.Digest), whose
// seed report says it is reading. A reading that ended before digests were kept has none, and a
// report that says it ended; the new version is then read from its first line.
func (h *Handler) readingEnded(ctx context.Context, crawl, version string) error {
	cp, err := h.progress.SeedProgress(ctx, crawl)
	if err != nil || cp.Version == version || cp.Digest != "" {
		return err
	}
	raw, err := h.blobs.Get(ctx, layout.SeedReport(crawl))
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return fmt.Errorf("extend crawl %s: %w", crawl, errStillReading) // its first reading wrote nothing yet
	case err != nil:
		return fmt.Errorf("read the seed report of crawl %s: %w", crawl, err)
	}
	var r SeedReport
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("decode the seed report of crawl %s: %w", crawl, err)
	}
	if r.Spec {
		return errSpecCrawl
	}
	if r.Reading {
		return fmt.Errorf("extend crawl %s: %w", crawl, errStillReading)
	}
	return nil
}
