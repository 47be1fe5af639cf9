package frontier

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// One URL's admission (admitOne): the checks it passes, in order, and the writes that admit it.

type outcome int

const (
	outSend outcome = iota
	outKnown
	outRejected
	outInvalid
	outFailed // the admission failed: the redelivery tries again
)

// link is one URL of a Links message, normalized (err: it could not be), and whether it is the
// only URL of its host in the message (groups.take). A link known to be confirmed a moment ago
// (known) needs no admission.
type link struct {
	raw   string
	u     *url.URL
	err   error
	lone  bool
	known bool
}

// links normalizes the URLs of m at order's indexes that need an admission (those known do not),
// and marks each the only one of its host among them.
func links(m *message.Links, order []int, known func(raw string) bool) []link {
	out := make([]link, len(m.URLs))
	perHost := map[string]int{}
	for _, i := range order {
		raw := m.URLs[i]
		if known(raw) {
			out[i] = link{raw: raw, known: true}
			continue
		}
		u, err := urlnorm.Normalize(raw)
		out[i] = link{raw: raw, u: u, err: err}
		if err == nil {
			perHost[u.Host]++
		}
	}
	for i, l := range out {
		out[i].lone = l.u != nil && perHost[l.u.Host] == 1
	}
	return out
}

// admitOne admits one URL of m (l, linked by the message named by), in the steps a link takes:
// normalized, looked up among the URLs known, checked against the crawl's rules and refusals,
// admitted in a group of the politeness slots, and given its page of the budgets.
func (f *Frontier) admitOne(ctx context.Context, m *message.Links, lim limits, by string, root *url.URL, l link, budgetTurn <-chan struct{}) (pending, outcome, error) {
	if l.err != nil {
		f.log.Debug("dropping an invalid url", "url", l.raw, "err", l.err.Error())
		return pending{}, outInvalid, nil
	}
	u := l.u
	norm := u.String()
	key := urlnorm.Key(norm)
	if known, err := f.knownSent(ctx, m.Crawl, key, norm, by); err != nil {
		return pending{}, 0, err
	} else if known {
		return pending{}, outKnown, nil
	}
	r := root
	if r == nil {
		r = u // a seed is its own scope root
	}
	if refused, err := f.refused(ctx, m, lim, r, u, key, norm); err != nil {
		return pending{}, 0, err
	} else if refused {
		return pending{}, outRejected, nil
	}
	groups := groupsIn(ctx)
	interval := lim.intervalOf(u.Host)
	run := f.runLength(interval)
	taken, place := groups.take(m.Crawl, u.Host, key, f.slots.Now(), run, l.lone, func(k int) time.Time {
		return f.slots.SlotGuess(u.Host, interval, f.cfg.SlotLead, k)
	})
	giveBack := func() { groups.give(m.Crawl, u.Host, key, taken) }
	res, group, err := f.admissions.AdmitIn(ctx, m.Crawl, taken, key, norm, r.String(), m.Depth, by)
	if res != crawlstate.Admitted || err != nil {
		giveBack()
	}
	if err != nil {
		return pending{}, 0, err
	}
	switch res {
	case crawlstate.Known:
		f.remember(m.Crawl, key, norm)
		return pending{}, outKnown, nil
	case crawlstate.Theirs:
		// Not remembered: if that message stopped before its send, its redelivery must find
		// the URL unsent here too, not in the memory of confirmed URLs.
		return pending{}, outKnown, nil
	case crawlstate.Admitted:
		if lim.maxPages > 0 || lim.maxPagesPerHost > 0 {
			<-budgetTurn // closed when the URL before it in the message is done
		}
		if over, err := f.reserve(ctx, m.Crawl, lim, u, group, key, norm, giveBack); err != nil {
			return pending{}, 0, err
		} else if over {
			return pending{}, outRejected, nil
		}
	}
	if res != crawlstate.Admitted {
		place = -1 // sent again in its old group, after the batch's own
	}
	return pending{crawl: m.Crawl, key: key, group: group, place: place, host: u.Host, interval: interval, run: run >= 2, msg: message.Target{URL: norm, Root: r.String(),
		Depth: m.Depth, Sitemap: m.Sitemap, Group: group}, resent: res == crawlstate.Unsent}, outSend, nil
}

// knownSent says whether the URL is known and sent already, as far as the memory of URLs seen
// tells and, when it has seen the URL, the table confirms: a Bloom false positive, or an item
// the message by may not have sent, is left to the admission to decide.
func (f *Frontier) knownSent(ctx context.Context, crawl, key, norm, by string) (bool, error) {
	if !f.seen(crawl, key) {
		return false, nil
	}
	if f.recentlyConfirmed(crawl, norm) {
		return true, nil // confirmed by the table a moment ago
	}
	unsent, _, err := f.admissions.Unsent(ctx, crawl, key, by)
	switch {
	case err == nil && !unsent:
		return true, nil
	case err != nil && !errors.Is(err, table.ErrNotFound):
		return false, err
	}
	return false, nil
}

// refused says whether the URL u, linked from a page under root r, is refused before its
// admission: by the crawl's rules, the opt-out list, the crawl's age, its money budget, or its
// stop by its user. A refusal that holds whoever links the URL is recorded (skipped) and
// remembered.
func (f *Frontier) refused(ctx context.Context, m *message.Links, lim limits, r, u *url.URL, key, norm string) (bool, error) {
	if err := lim.rules.Check(r, u, m.Depth, f.now()); err != nil {
		if lim.rules.Check(u, u, 0, f.now()) == nil {
			// Out of scope from this root, or too deep on this path: another seed's page, or a
			// shorter path, may still bring the URL in. Nothing is recorded or remembered.
			return true, nil
		}
		// Refused whoever links it (an exclude pattern, a trap): recorded skipped, once.
		return true, f.reject(ctx, m, key, norm, err)
	}
	if f.optOuts != nil {
		e, out, err := f.optOuts.OptedOut(ctx, u)
		if err != nil {
			return false, err
		}
		if out {
			// On the opt-out list: recorded skipped, whichever crawl or link brings it.
			why := errclass.Errorf(errclass.OptedOut, "on the opt-out list (%s %s)", e.Kind, e.Value)
			return true, f.reject(ctx, m, key, norm, why)
		}
	}
	return f.crawlClosed(ctx, m, key, norm)
}

// crawlClosed says whether the crawl admits no more URLs: it is too old (the URL is recorded
// skipped), its money is spent, or its user stopped it (the link is only counted).
func (f *Frontier) crawlClosed(ctx context.Context, m *message.Links, key, norm string) (bool, error) {
	if err := f.gates.AdmissionOpen(ctx, m.Crawl); err != nil {
		if errclass.Of(err) != errclass.Scope {
			return false, err
		}
		// The crawl is too old to admit more: its items would expire too soon after.
		return true, f.reject(ctx, m, key, norm, err)
	}
	if err := f.gates.BudgetOpen(ctx, m.Crawl, f.cfg.BudgetUSD, f.cfg.Prices); err != nil {
		if errclass.Of(err) != errclass.Budget {
			return false, err
		}
		// The crawl's money is spent: a link is no longer admitted, only counted. What was admitted
		// before goes on to its end, and the crawl drains.
		return true, f.counters.CountBudgetRefusal(ctx, m.Crawl)
	}
	if run, err := f.gates.RunOf(ctx, m.Crawl); err != nil {
		return false, err
	} else if run == crawlstate.StoppedBy {
		// Stopped by its user (crawl stop): a link is counted, not admitted.
		return true, f.counters.CountStopRefusal(ctx, m.Crawl)
	}
	return false, nil
}

// reject records the URL skipped for why, and remembers it.
func (f *Frontier) reject(ctx context.Context, m *message.Links, key, norm string, why error) error {
	if _, err := f.skips.Reject(ctx, m.Crawl, key, norm, m.Depth, why); err != nil {
		return err
	}
	f.remember(m.Crawl, key, norm)
	return nil
}

// reserve reserves the admitted URL's page of the crawl's budgets (--max-pages,
// --max-pages-per-host). Over a budget, or in a trap, the URL is skipped in its group, which is
// given back (giveBack), and over is set.
func (f *Frontier) reserve(ctx context.Context, crawl string, lim limits, u *url.URL, group, key, norm string, giveBack func()) (over bool, err error) {
	err = f.pageBudget.ReserveBudget(ctx, crawl, u.Hostname(), lim.maxPages, lim.maxPagesPerHost)
	if err == nil {
		return false, nil
	}
	if c := errclass.Of(err); c == errclass.Budget || c == errclass.Trap {
		giveBack()
		if err := f.skips.SkipQueued(ctx, crawl, group, key, err); err != nil {
			return false, err
		}
		f.remember(crawl, key, norm)
		return true, nil
	}
	// A backend failure: take the admission back, so that the redelivered message admits
	// the URL afresh and reserves its budget then (an unsent item would skip that). A
	// concurrent delivery of the same message may have sent the URL meanwhile: its fetch
	// message finds no item and is dropped (the fetcher), and the URL is not remembered
	// there (resent), so the redelivery admits it here again. The group is not given
	// back: its tombstone would drop the URL if a link of this batch admitted it there.
	if uerr := f.admissions.Unadmit(ctx, crawl, group, key); uerr != nil {
		f.log.Warn("take back an admission", "url", norm, "err", uerr.Error())
	}
	return false, err
}
