package frontier

import (
	"context"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// The crawl state a Frontier works with, one capability an interface (crawlstate.URLs, Hosts and
// Runs have them; pipeline's checks.go holds each to them). Each is safe for concurrent use, as the
// URLs of a message are admitted at once.

// Admissions writes the URLs admitted, once each (DESIGN invariant 3), named for the Links message
// that admits them so that its redelivery sends what it had not sent.
type Admissions interface {
	// AdmitIn writes a queued item for the URL in group unless one exists, and returns the URL's
	// group: group when admitted, the item's own otherwise.
	AdmitIn(ctx context.Context, crawl, group, key, rawURL, root string, depth int, by string) (crawlstate.AdmitResult, string, error)
	// Unsent tells whether the Links message by must send the URL's fetch message again, with
	// the URL's group; table.ErrNotFound: the URL has no item.
	Unsent(ctx context.Context, crawl, key, by string) (bool, string, error)
	// Unadmit takes back an admission that AdmitIn just made in group, while no message has
	// claimed the URL since.
	Unadmit(ctx context.Context, crawl, group, key string) error
}

// Skips records URLs that end skipped without a fetch: refused before their admission, or over a
// page budget after it.
type Skips interface {
	// Reject records a URL that is not admitted as skipped for cause, once.
	Reject(ctx context.Context, crawl, key, rawURL string, depth int, cause error) (bool, error)
	// SkipQueued moves a queued URL of group that no message holds to skipped for cause.
	SkipQueued(ctx context.Context, crawl, group, key string, cause error) error
}

// Gates tells whether a crawl admits new URLs: it is young enough for its items to outlive their
// fetch (an error of class scope), its money is not spent (class budget), its user did not stop it.
type Gates interface {
	AdmissionOpen(ctx context.Context, crawl string) error
	BudgetOpen(ctx context.Context, crawl string, usd float64, prices cost.Prices) error
	RunOf(ctx context.Context, crawl string) (crawlstate.Run, error)
}

// PageBudget takes a page of the crawl's budget and of its host's for an admitted URL; an error of
// class budget or trap: one is used up.
type PageBudget interface {
	ReserveBudget(ctx context.Context, crawl, host string, maxPages, maxPerHost int) error
}

// Counters counts the links refused without a record, a crawl's money spent or its user's stop,
// and writes the counts buffered since the last Flush.
type Counters interface {
	CountBudgetRefusal(ctx context.Context, crawl string) error
	CountStopRefusal(ctx context.Context, crawl string) error
	Flush(ctx context.Context) error
}

// Slots books hosts' politeness slots for the fetch messages sent (send.go), and guesses them
// beforehand, on the store's clock, to group the URLs (groups.go).
type Slots interface {
	// Now is the time on the store's clock.
	Now() time.Time
	// SlotGuess guesses, without a read or a write, when the kth of the host's next slots at
	// interval will start, none sooner than lead from now.
	SlotGuess(host string, interval, lead time.Duration, k int) time.Time
	// BookSlots books n of the host's slots, none horizon or more from now nor sooner than lead,
	// and spare more for the next bookings.
	BookSlots(ctx context.Context, host string, interval time.Duration, n int, horizon, lead time.Duration, spare int) (crawlstate.Booked, error)
}

// Starts records when a crawl started, unless it is on record: its items live, and it admits
// URLs, for a time counted from then.
type Starts interface {
	MarkStarted(ctx context.Context, crawl string) error
}
