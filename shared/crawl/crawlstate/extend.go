package crawlstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A seed file that grows extends its crawl. A new version of a URL list whose last crawl has not
// ended sends its seeds into that crawl, not into a new one that would fetch every page again
// (schedule: package scheduler, extend.go). New work then comes from outside the crawl, where all
// other work comes from work the crawl still has (a page is parsed before its links are marked
// done), so the crawl's end must not be decided while an extension's seeds are on their way:
//
//  1. BeginExtension marks the crawl item extending, on the condition that its end is not decided;
//     a crawl that ended is not extended (the new version starts a crawl of its own).
//  2. The extension names its Links messages (NoteLinksSent, which moves the end's counters) before
//     it sends them, and checkpoints its reading as a first reading does (SeedProgress).
//  3. EndExtension clears the mark and records the version as the crawl's last extension.
//
// A check decides the end (StepCheck with an Event) only on the condition that no extension is
// marked, and that the last extension is the one it read before it read the counters. So a check
// whose counters were read before step 2's notes, and whose tally missed them, cannot decide:
// either the mark is still there, or the last extension changed since it read the crawl item. Its
// step is refused with ErrExtended, and the chain goes on. A check that read the crawl item after
// step 3 read the counters after step 2's notes, which show the Links messages left to admit.

// Attributes of the crawl item for its extensions.
const (
	attrExtending = "extending" // the version of the seed file being taken in
	attrExtended  = "extended"  // the version last taken in whole
)

// ErrExtended is a deciding Step's answer when the crawl's seed file was extended, or is being
// extended, since the check read the crawl item: its tally may not have seen the new seeds, so it
// decides nothing, and the chain goes on.
var ErrExtended = errors.New("the crawl's seed file was extended since the check began")

// ErrExtending is BeginExtension's answer while another version of the seed file is being taken in:
// the caller tries again later (its message is delivered again).
var ErrExtending = errors.New("another version of the crawl's seed file is being taken in")

// Extension is what BeginExtension found.
type Extension struct {
	// Ended: the crawl's end is decided, or it was stopped (its URLs end stopped), and it was not
	// extended.
	Ended bool
	// Progress is the crawl's seed progress: how far the seed file was read, and which version.
	Progress SeedProgress
}

// BeginExtension marks the crawl extending by version of its seed file (see above), unless its end
// is decided or it was stopped (Ended). The same version marked again (a redelivery, or a write the SDK sent again)
// passes; another version in progress gets ErrExtending.
func (s *Runs) BeginExtension(ctx context.Context, crawl, version string) (Extension, error) {
	cond := table.And(table.ItemExists(), table.NotExists(attrEnd), table.Ne(attrRun, string(StoppedBy)),
		table.Or(table.NotExists(attrExtending), table.Eq(attrExtending, version)))
	it, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{attrExtending: version}}, cond)
	if cf, failed := table.IsConditionFailed(err); failed {
		switch {
		case len(cf.Item) == 0:
			return Extension{}, fmt.Errorf("extend crawl %s: %w", crawl, ErrUnknownCrawl)
		case cf.Item.Has(attrEnd) || Run(cf.Item.String(attrRun)) == StoppedBy:
			p, err := progressOf(crawl, cf.Item)
			return Extension{Ended: true, Progress: p}, err
		default:
			return Extension{}, fmt.Errorf("extend crawl %s with version %s: %w (%s)", crawl, version, ErrExtending, cf.Item.String(attrExtending))
		}
	}
	if err != nil {
		return Extension{}, fmt.Errorf("extend crawl %s: %w", crawl, err)
	}
	p, err := progressOf(crawl, it)
	return Extension{Progress: p}, err
}

// EndExtension clears the crawl's mark of version, and records it as the last extension. A write
// the SDK sent again finds its own result, and passes.
func (s *Runs) EndExtension(ctx context.Context, crawl, version string) error {
	_, err := s.t.Update(ctx, CrawlKey(crawl), table.Update{Set: map[string]any{attrExtended: version}, Remove: []string{attrExtending}},
		table.Eq(attrExtending, version))
	if cf, failed := table.IsConditionFailed(err); failed {
		if !cf.Item.Has(attrExtending) && cf.Item.String(attrExtended) == version {
			return nil
		}
		return fmt.Errorf("end the extension of crawl %s by version %s: it is no longer marked", crawl, version)
	}
	if err != nil {
		return fmt.Errorf("end the extension of crawl %s: %w", crawl, err)
	}
	return nil
}

// notExtended is a deciding step's condition: no extension marked, and the last one the one the
// check read (c.Extended).
func notExtended(c Checks) table.Cond {
	last := table.Eq(attrExtended, c.Extended)
	if c.Extended == "" {
		last = table.NotExists(attrExtended)
	}
	return table.And(table.NotExists(attrExtending), last)
}

// extendedSince reports whether a crawl item that refused a deciding step was extended since the
// check read c.
func extendedSince(c Checks, it table.Item) bool {
	return it.Has(attrExtending) || it.String(attrExtended) != c.Extended
}
