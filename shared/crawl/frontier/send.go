package frontier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Sending a schedule batch's fetch messages: the politeness slots booked per host, the URLs packed
// into messages by the second they come due, and what a failed send leaves to the redelivery.

// Send books the politeness slots of the staged URLs and sends their fetch messages, the URLs due
// back at the same second in one message, whichever Links message admitted them; it remembers each
// URL sent. It returns, for each staged message, nil or the error that left some of its URLs
// unsent: that message must be delivered again, to send them.
func (f *Frontier) Send(ctx context.Context, staged []*Staged) []error {
	errs := make([]error, len(staged))
	var out []pending
	var from []int // the staged message of each URL in out
	for i, st := range staged {
		out = append(out, st.out...)
		for range st.out {
			from = append(from, i)
		}
	}
	if len(out) == 0 {
		return errs
	}
	delays := f.book(ctx, out)
	groups := pack(out, delays, f.cfg.RunSpan)
	entries := make([]queue.Entry, len(groups))
	for g, idx := range groups {
		targets := make([]message.Target, len(idx))
		for j, i := range idx {
			targets[j] = out[i].msg
		}
		body, err := message.Encode(message.Pack(out[idx[0]].crawl, targets))
		if err != nil {
			for _, i := range idx {
				errs[from[i]] = err
			}
			continue
		}
		entries[g] = queue.Entry{ID: strconv.Itoa(g), Body: body, Delay: delays[idx[0]]}
	}
	failed := f.sendEntries(ctx, groups, out, entries)
	for g, idx := range groups {
		if entries[g].Body == "" {
			continue // not encoded: its error is set
		}
		if failed[entries[g].ID] != nil {
			for _, i := range idx {
				errs[from[i]] = fmt.Errorf("send fetch messages: %w", failed[entries[g].ID]) // the redelivered message sends it
			}
			continue
		}
		for _, i := range idx {
			if !out[i].resent {
				f.remember(out[i].crawl, out[i].key, out[i].msg.URL)
			}
			staged[from[i]].Result.Sent++
		}
	}
	return errs
}

// sendEntries sends the encoded fetch messages, a run to the slow lane's queue when there is one
// (Config.SlowQueue) and every other message to the fetch queue, and returns the error of each
// message that was not sent, by its entry's ID.
func (f *Frontier) sendEntries(ctx context.Context, groups [][]int, out []pending, entries []queue.Entry) map[string]error {
	byQueue := map[string][]queue.Entry{}
	var order []string
	for g, idx := range groups {
		if entries[g].Body == "" {
			continue
		}
		q := f.cfg.FetchQueue
		if out[idx[0]].run && f.cfg.SlowQueue != "" {
			q = f.cfg.SlowQueue // a group is a run or not as a whole: one host's URLs (runs.go)
		}
		if byQueue[q] == nil {
			order = append(order, q)
		}
		byQueue[q] = append(byQueue[q], entries[g])
	}
	failed := map[string]error{}
	for _, q := range order {
		err := f.send.SendBatch(ctx, q, byQueue[q])
		var be *queue.BatchError
		switch {
		case err == nil:
		case errors.As(err, &be):
			for id, e := range be.Failed {
				failed[id] = e
			}
		default:
			for _, e := range byQueue[q] {
				failed[e.ID] = err
			}
		}
	}
	return failed
}

// packBytes bounds the URLs' share of one fetch message: SQS bills a request per 64 KiB of it.
const packBytes = 48 << 10

// pack groups the URLs to send into fetch messages: those of one crawl and group (groups.go)
// whose slots start within packSpread of the earliest's (or, without slots, that are sent after the
// same delay) go together, at most message.MaxPackedURLs and about packBytes in each, and at most
// one URL of each host (a group holds one of each): a message's URLs all go out as soon as it
// arrives, none waiting behind another of its host for a slot. A run's URLs (runs.go), of one
// host, go together when their slots start within runSpan of the earliest's. A message is sent
// after its earliest URL's delay, and the others wait for their slots in place
// (fetcher.MaxHeldWait; a run's as long as the fetcher's invocation allows). Each list holds
// indexes of out, earliest first.
func pack(out []pending, delays []time.Duration, runSpan time.Duration) [][]int {
	type key struct{ crawl, group string }
	var order []key
	byGroup := map[key][]int{}
	for i, p := range out {
		k := key{p.crawl, p.group}
		if byGroup[k] == nil {
			order = append(order, k)
		}
		byGroup[k] = append(byGroup[k], i)
	}
	// due orders a group's URLs: by slot, those without one after, by their delay.
	due := func(i int) (time.Time, time.Duration) { return out[i].msg.Slot, delays[i] }
	together := func(first, i int) bool {
		fs, fd := due(first)
		s, d := due(i)
		if fs.IsZero() || s.IsZero() {
			return fs.IsZero() && s.IsZero() && fd == d
		}
		if out[i].run {
			return s.Sub(fs) <= runSpan
		}
		return s.Sub(fs) <= packSpread
	}
	var msgs [][]int
	for _, k := range order {
		idx := byGroup[k]
		slices.SortStableFunc(idx, func(a, b int) int {
			as, ad := due(a)
			bs, bd := due(b)
			if as.IsZero() != bs.IsZero() {
				if as.IsZero() {
					return 1 // a URL without a slot after those with one
				}
				return -1
			}
			if c := as.Compare(bs); c != 0 {
				return c
			}
			return cmp.Compare(ad, bd)
		})
		var cur []int
		size := 0
		hosts := map[string]bool{}
		for _, i := range idx {
			p := out[i]
			n := len(p.msg.URL) + len(p.msg.Root) + len(p.msg.Group) + 100
			// A group of one host's is a run, whose URLs go out one after another.
			sameHost := hosts[p.host] && !p.run
			limit := message.MaxPackedURLs
			if p.run {
				limit = message.MaxFetchURLs
			}
			if len(cur) > 0 && (len(cur) >= limit || size+n > packBytes || sameHost || !together(cur[0], i)) {
				msgs = append(msgs, cur)
				cur, size, hosts = nil, 0, map[string]bool{}
			}
			cur, size, hosts[p.host] = append(cur, i), size+n, true
		}
		msgs = append(msgs, cur)
	}
	return msgs
}

// packSpread is how much later than a message's earliest slot another may start in it: the
// message is sent after the earliest's delay, rounded down to the second, so the latest URL may
// come MaxHeldWait early, and the fetcher waits for it in place (fetcher.MaxHeldWait).
const packSpread = time.Second

// bookConcurrency bounds the hosts whose slots one message books at once.
const bookConcurrency = 8

// book reserves the politeness slots of the URLs about to be sent, with one write per host, or
// none while the host's spare slots last (crawlstate.Hosts.BookSlots), and returns each message's
// delay: each fetch message carries its slot and arrives just before it, so that a URL waits for
// its host in the queue once, from the start, instead of being received, refused and re-sent. Slots are booked at most the fetcher's
// SlotHorizon ahead; a URL beyond it is sent without one, to arrive when the booking ends and
// reserve then, and so is the lone URL of a host that is idle as far as this store knows (idle),
// and every run of URLs (runs.go): its fetcher books its slots as it starts it.
// A failed booking leaves the reservation to the fetcher: nothing else depends on it.
func (f *Frontier) book(ctx context.Context, out []pending) []time.Duration {
	delays := make([]time.Duration, len(out))
	// The URLs of one host at one crawl's rate book together.
	type hostRate struct {
		host     string
		interval time.Duration
	}
	byHost := map[hostRate][]int{}
	for i, p := range out {
		if p.interval > 0 {
			k := hostRate{p.host, p.interval}
			byHost[k] = append(byHost[k], i)
		}
	}
	for _, idx := range byHost {
		// In the order their groups were guessed in (groups.go): the kth URL takes the kth slot.
		slices.SortStableFunc(idx, func(a, b int) int { return cmpPlace(out[a].place, out[b].place) })
	}
	var g errgroup.Group
	g.SetLimit(bookConcurrency)
	for hr, idx := range byHost {
		host, interval := hr.host, hr.interval
		if out[idx[0]].run {
			continue // a run books its slots at its fetcher, as it starts (runs.go)
		}
		if len(idx) == 1 && f.idle(host, interval) {
			continue // no slot and no delay: the fetcher takes one as the message arrives
		}
		g.Go(func() error {
			got, err := f.slots.BookSlots(ctx, host, interval, len(idx), queue.MaxDelay, f.cfg.SlotLead, max(f.cfg.SpareSlots, 0))
			if err != nil {
				// The spares it gave are used; the other URLs reserve theirs at the fetcher.
				f.log.Debug("book politeness slots", "host", host, "err", err.Error())
				got.Free = f.now()
			}
			now := f.now()
			for j, i := range idx {
				if j >= len(got.At) {
					delays[i] = min(max(got.Free.Sub(now), 0), queue.MaxDelay)
					continue
				}
				slot := got.At[j]
				out[i].msg.Slot, out[i].msg.Gap = slot, got.Interval.Milliseconds()
				// SQS delays are whole seconds: arrive early, by up to the lead and a second, and
				// wait the rest in place.
				delays[i] = min(max((slot.Sub(now)-f.cfg.SlotLead).Truncate(time.Second), 0), queue.MaxDelay)
			}
			return nil
		})
	}
	_ = g.Wait() // every goroutine returns nil
	return delays
}

// idle reports whether the host has no slot from now on that this store knows of: none it booked
// for the host (spare or not) and none it saw another book. A lone URL of such a host is sent
// without a slot, at once, and the fetcher takes the host's slot when the message arrives (one
// write, the request at once when the host is still free). Booked here, the same URL would cost
// that write twice whenever its message came more than half an interval late for its slot, as
// most do while the fetch invocations are busy: its fetcher would book the host's next free slot
// again. A host that another store booked meanwhile makes the message wait for the end of that
// booking in the queue (fetcher.takeSlot), as a message late for its slot does. Several URLs of a
// host still book together, one write for all; a run of URLs books none here (runs.go).
func (f *Frontier) idle(host string, interval time.Duration) bool {
	return !f.slots.SlotGuess(host, interval, 0, 0).After(f.slots.Now())
}

// cmpPlace orders places, those without one (-1) last.
func cmpPlace(a, b int) int {
	switch {
	case a == b:
		return 0
	case a < 0:
		return 1
	case b < 0:
		return -1
	}
	return a - b
}
