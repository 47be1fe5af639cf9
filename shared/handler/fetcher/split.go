package fetcher

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// A fetch message may carry several URLs (message.Fetch.URLs): the frontier packs the URLs that
// come due at the same second. The handler splits such a message into records of one URL each, so
// that every URL is claimed, fetched, stored and recorded as if its message came alone.
//
// The record of a message's ith URL is named id#i, after the message's id; the message's URLs are
// claimed together under its id (claims.go). A URL that fails goes back to the queue alone, in a
// message of its own that carries the claim's owner (message.Target.Prev), so that its claim
// passes to the new message, and the message of several is acknowledged: its other URLs are
// done, or waiting in messages of their own, and a redelivery would only send those again. Only
// if that send fails does the message fail, to be delivered again whole (its done URLs are then
// found done in their group).

// splitRetryDelay is how long a URL that failed in a message of several waits before its own
// message is delivered: about what a failed record waits for its visibility timeout, at least.
const splitRetryDelay = time.Second

// parted is what split made of a batch: for each record it made of a message of several URLs, by
// the record's name, that message's id and the record's own body.
type parted struct {
	parts map[string]part
}

type part struct {
	msg  string // the id of the message of several URLs
	body string // the part's own message, one URL
	// What its claim needs (claims.go): the crawl, the URL's key, its group and the owner it was
	// re-queued from; key is empty for a part whose URL does not normalise.
	crawl, key, group string
	prev              []string
}

// split returns the batch with every message of several URLs replaced by records of one URL each.
// A message that does not decode stays whole, to be quarantined as it is.
func split(ev events.SQSEvent) (events.SQSEvent, parted) {
	var out events.SQSEvent
	p := parted{parts: map[string]part{}}
	for _, rec := range ev.Records {
		parts := urls(rec.Body)
		if len(parts) < 2 {
			out.Records = append(out.Records, rec)
			continue
		}
		for i, pt := range parts {
			one := rec
			one.MessageId, one.Body = partName(rec.MessageId, i), pt.body
			pt.msg = rec.MessageId
			p.parts[one.MessageId] = pt
			out.Records = append(out.Records, one)
		}
	}
	return out, p
}

// regroup turns the failures of the split batch into the batch's: a failed record of one URL
// out of several is sent back alone, and its message fails only if that send fails.
func (h *Handler) regroup(ctx context.Context, p parted, failed []events.SQSBatchItemFailure) []events.SQSBatchItemFailure {
	if len(p.parts) == 0 {
		return failed
	}
	var out []events.SQSBatchItemFailure
	again := map[string][]string{} // message id -> the names of its failed parts
	var order []string
	for _, f := range failed {
		pt, ok := p.parts[f.ItemIdentifier]
		if !ok {
			out = append(out, f)
			continue
		}
		if again[pt.msg] == nil {
			order = append(order, pt.msg)
		}
		again[pt.msg] = append(again[pt.msg], f.ItemIdentifier)
	}
	for _, id := range order {
		names := again[id]
		entries := make([]queue.Entry, len(names))
		for i, name := range names {
			entries[i] = queue.Entry{ID: strconv.Itoa(i), Body: withPrev(p.parts[name].body, id), Delay: splitRetryDelay}
		}
		if err := h.send.SendBatch(ctx, h.cfg.FetchQueue, entries); err != nil {
			h.log.Warn("send failed URLs back alone; the whole message is delivered again", "messageId", id,
				"urls", len(names), "err", err.Error())
			out = append(out, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
	}
	return out
}

// partName names the ith URL of the message id.
func partName(id string, i int) string { return id + "#" + strconv.Itoa(i) }

// withPrev returns the body re-queued by owner (message.Fetch.Requeued): a claim owner's message
// took passes to the new message. A body that does not decode is sent
// back as it is, to be quarantined.
func withPrev(body, owner string) string {
	m, err := message.DecodeFetch(body)
	if err != nil {
		return body
	}
	m.Requeued(owner, false)
	b, err := message.Encode(m)
	if err != nil {
		return body
	}
	return b
}

// urls returns the one-URL messages that a fetch message of several URLs stands for, and nothing
// for any other body (one URL, or one that does not decode).
func urls(body string) []part {
	if !strings.Contains(body, `"urls"`) {
		return nil // the usual message of one URL, not decoded twice
	}
	m, err := message.DecodeFetch(body)
	if err != nil || len(m.URLs) == 0 {
		return nil
	}
	parts := make([]part, len(m.URLs))
	for i, one := range m.Split() {
		b, err := message.Encode(one)
		if err != nil {
			return nil // cannot happen: a part is smaller than the whole, which encoded
		}
		parts[i] = part{body: b, crawl: one.Crawl, group: one.Group, prev: one.Prev}
		if u, err := urlnorm.Normalize(one.URL); err == nil {
			parts[i].key = urlnorm.Key(u.String())
			if parts[i].group == "" {
				parts[i].group = parts[i].key
			}
		}
	}
	return parts
}
