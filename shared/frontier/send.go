package frontier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/crawlstack/crawlstack/shared/message"
	"github.com/crawlstack/crawlstack/shared/queue"
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
	groups := pack(out, delays)
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
	sendErr := f.send.SendBatch(ctx, f.cfg.FetchQueue, nonEmpty(entries))
	var be *queue.BatchError
	if sendErr != nil && !errors.As(sendErr, &be) {
		be = &queue.BatchError{Failed: map[string]error{}}
		for _, e := range entries {
			be.Failed[e.ID] = sendErr
		}
	}
	for g, idx := range groups {
		if entries[g].Body == "" {
			continue // not encoded: its error is set
		}
		if be != nil && be.Failed[entries[g].ID] != nil {
			for _, i := range idx {
				errs[from[i]] = fmt.Errorf("send fetch messages: %w", be.Failed[entries[g].ID]) // the redelivered message sends it
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

// nonEmpty drops the entries left empty (a message that did not encode).
func nonEmpty(entries []queue.Entry) []queue.Entry {
	out := entries[:0:0]
	for _, e := range entries {
		if e.Body != "" {
			out = append(out, e)
		}
	}
	return out
}

// packBytes bounds the URLs' share of one fetch message: SQS bills a request per 64 KiB of it.
const packBytes = 48 << 10

// pack groups the URLs to send into fetch messages: those of one crawl sent back after the same
// delay go together (a wide crawl's hosts each have a URL due about every second), at most
// message.MaxFetchURLs and about packBytes in each, and at most one URL of each host: a message's
// URLs all go out as soon as it arrives, none waiting behind another of its host for a slot.
// Each group lists indexes of out, in order.
func pack(out []pending, delays []time.Duration) [][]int {
	type group struct {
		idx  []int
		size int
	}
	type due struct {
		crawl string
		delay time.Duration
	}
	type dueGroups struct {
		list  []*group
		first int            // the first group of list that may take a URL
		next  map[string]int // by host, the first group of list without it
	}
	var all []*group
	open := map[due]*dueGroups{}
	for i, p := range out {
		size := len(p.msg.URL) + len(p.msg.Root) + 100
		d := due{p.crawl, delays[i]}
		gs := open[d]
		if gs == nil {
			gs = &dueGroups{next: map[string]int{}}
			open[d] = gs
		}
		full := func(g *group) bool { return len(g.idx) == message.MaxFetchURLs || g.size+size > packBytes }
		for gs.first < len(gs.list) && len(gs.list[gs.first].idx) == message.MaxFetchURLs {
			gs.first++
		}
		k := max(gs.first, gs.next[p.host])
		for k < len(gs.list) && full(gs.list[k]) {
			k++
		}
		if k == len(gs.list) {
			g := &group{}
			all, gs.list = append(all, g), append(gs.list, g)
		}
		g := gs.list[k]
		g.idx, g.size = append(g.idx, i), g.size+size
		gs.next[p.host] = k + 1
	}
	idx := make([][]int, len(all))
	for i, g := range all {
		idx[i] = g.idx
	}
	return idx
}

// bookConcurrency bounds the hosts whose slots one message books at once.
const bookConcurrency = 8

// book reserves the politeness slots of the URLs about to be sent, with one write per host, or
// none while the host's spare slots last (crawlstate.Store.BookSlots), and returns each message's
// delay: each fetch message carries its slot and arrives just before it, so that a URL waits for
// its host in the queue once, from the start, instead of being received, refused and re-sent. Slots are booked at most the fetcher's
// SlotHorizon ahead; a URL beyond it is sent without one, to arrive when the booking ends and
// reserve then. A failed booking leaves the reservation to the fetcher: nothing else depends on it.
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
	var g errgroup.Group
	g.SetLimit(bookConcurrency)
	for hr, idx := range byHost {
		host, interval := hr.host, hr.interval
		g.Go(func() error {
			got, err := f.state.BookSlots(ctx, host, interval, len(idx), queue.MaxDelay, f.cfg.SlotLead, max(f.cfg.SpareSlots, 0))
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
