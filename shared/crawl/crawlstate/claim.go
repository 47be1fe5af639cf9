package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Claiming URLs in their group's item (see outcomes.go), and the other moves of a URL that its
// group decides: taking a fetched URL back whose page is gone, skipping a queued URL that no
// message holds, and taking an admission back.

// MaxGroupWrite bounds the URLs of one claim or outcome write on a group's item: each URL adds a
// few conditions, and ten keep the expression well inside DynamoDB's 4 KB. A run's URLs
// (frontier/runs.go), up to message.MaxFetchURLs of them, take a write for every ten.
const MaxGroupWrite = 10

// maxClaimRounds bounds the conditional updates of one ClaimGroup: each refused round drops the
// URLs found done or held, or turns a redriven failure into a claim of its own, so a round that
// changes nothing means the item moves under it faster than it can be read.
const maxClaimRounds = 8

// ClaimGroup takes the URLs of group with the keys for owner (the fetch message's id), for lease,
// in one write. A URL is claimed when it has no outcome, or a redrivable one (its message went on
// to the DLQ and came back through a redrive), and no tombstone, and no other owner holds it with
// a live lease; prev are the owners of the messages that re-queued the URL as this one
// (message.Target.Prev), whose claims pass to owner. It returns the claimed URLs' states before the claim (Queued,
// or Failed for a redriven failure), by key; a key left out is done, held or gone: its message is
// a duplicate.
//
// More than MaxGroupWrite keys (a run's) are claimed in writes of that many, each on its own.
func (s *URLs) ClaimGroup(ctx context.Context, crawl, group, owner string, prev []string, lease time.Duration, keys []string) (map[string]State, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if len(keys) > MaxGroupWrite {
		all := map[string]State{}
		for part := range slices.Chunk(keys, MaxGroupWrite) {
			got, err := s.ClaimGroup(ctx, crawl, group, owner, prev, lease, part)
			if err != nil {
				return nil, err
			}
			maps.Copy(all, got)
		}
		return all, nil
	}
	expires, err := s.crawls.expiry(ctx, crawl)
	if err != nil {
		return nil, err
	}
	me, was := ownerTag(owner), passedFrom(prev)
	want := map[string]State{}
	for _, k := range keys {
		want[k] = Queued
	}
	for range maxClaimRounds {
		now := s.now()
		set := map[string]any{table.TTLAttr: expires}
		var remove []string
		conds := make([]table.Cond, 0, len(want))
		for k, st := range want {
			set[ownerAttr(k)], set[leaseAttr(k)] = me, now.Add(lease).UnixMilli()
			free := table.NotExists(outcomeAttr(k))
			if st == Failed {
				free = table.Eq(redriveAttr(k), true)
				remove = append(remove, outcomeAttr(k), redriveAttr(k))
			}
			holders := []table.Cond{table.NotExists(ownerAttr(k)), table.Eq(ownerAttr(k), me), table.Lt(leaseAttr(k), now.UnixMilli())}
			for w := range was {
				holders = append(holders, table.Eq(ownerAttr(k), w))
			}
			conds = append(conds, free, table.NotExists(tombstoneAttr(k)), table.Or(holders...))
		}
		_, err := s.t.Update(ctx, groupKey(crawl, group), table.Update{Set: set, Remove: remove}, table.And(conds...))
		cf, refused := table.IsConditionFailed(err)
		if err != nil && !refused {
			return nil, fmt.Errorf("claim %d urls of group %s: %w", len(want), group, err)
		}
		if !refused || claimedIn(cf.Item, want, me, now.Add(lease).UnixMilli()) {
			return want, nil // claimed, now or by this write's first attempt (the SDK's replay)
		}
		// Learn from the item as it was which URLs are done, held or gone, and try the others.
		g := cf.Item
		changed := false
		for k, st := range want {
			held := heldByAnother(g, k, me, was, now)
			switch {
			case g.Has(tombstoneAttr(k)), held:
				delete(want, k)
				changed = true
			case g.Has(outcomeAttr(k)) && g.Bool(redriveAttr(k)):
				if st != Failed {
					want[k] = Failed
					changed = true
				}
			case g.Has(outcomeAttr(k)):
				delete(want, k) // done
				changed = true
			case st == Failed:
				want[k] = Queued // its redrive was claimed and recorded meanwhile; ask again
				changed = true
			}
		}
		if len(want) == 0 {
			return want, nil
		}
		if !changed {
			// Refused, yet the item as returned allows every claim: it moved in between.
			continue
		}
	}
	return nil, fmt.Errorf("claim %d urls of group %s: the item kept changing", len(want), group)
}

// claimedIn reports whether the group's item g holds the URLs of want claimed as ClaimGroup's
// write claims them, by me until the lease's end: the write's own first attempt, applied, whose
// replay was refused (a redriven failure's outcome is gone). A lease's end to the millisecond is
// this write's.
func claimedIn(g table.Item, want map[string]State, me string, until int64) bool {
	for k := range want {
		if g.Has(outcomeAttr(k)) || g.String(ownerAttr(k)) != me || g.Int(leaseAttr(k)) != until {
			return false
		}
	}
	return true
}

// Claim takes one URL for owner, in its group (ClaimGroup), reading its item first for the
// group. It returns the URL, with its state before the claim and its claim as written (Owner is
// OwnerTag(owner)), or ErrClaimed.
func (s *URLs) Claim(ctx context.Context, crawl, key, owner string, lease time.Duration) (URL, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, key))
	if errors.Is(err, table.ErrNotFound) {
		return URL{}, ErrClaimed // no item: nothing to claim
	}
	if err != nil {
		return URL{}, fmt.Errorf("claim %s: %w", key, err)
	}
	u := urlFrom(key, it)
	if u.State != Queued {
		return URL{}, ErrClaimed // refused at its admission, or skipped before its send
	}
	got, err := s.ClaimGroup(ctx, crawl, GroupOf(u), owner, nil, lease, []string{key})
	if err != nil {
		return URL{}, err
	}
	prev, ok := got[key]
	if !ok {
		return URL{}, ErrClaimed
	}
	if u, err = s.withGroup(ctx, crawl, u); err != nil {
		return URL{}, err
	}
	u.State = prev
	return u, nil
}

// Refetch takes a fetched URL back for owner, claimed as ClaimGroup claims it, because the page
// stored for it is gone: missing or damaged. After a power loss, the embedded file store may lose
// a file whose record survived (fetch records a page while its file is being synced). lost is the
// URL as read before the page was found gone. Refetch returns ErrClaimed when the URL has moved on
// since: fetched again by another worker. The crawl's fetched count gives the page back.
func (s *URLs) Refetch(ctx context.Context, crawl, key, owner string, lease time.Duration, lost URL) (URL, error) {
	if lost.outcome == "" || lost.State != Fetched {
		return URL{}, ErrClaimed
	}
	now := s.now()
	me, until := ownerTag(owner), now.Add(lease).UnixMilli()
	_, err := s.t.Update(ctx, groupKey(crawl, GroupOf(lost)), table.Update{
		Set:    map[string]any{ownerAttr(key): me, leaseAttr(key): until},
		Remove: []string{outcomeAttr(key), redriveAttr(key)},
	}, table.Eq(outcomeAttr(key), lost.outcome))
	if cf, moved := table.IsConditionFailed(err); moved && !refetchedIn(cf.Item, key, me, until) {
		return URL{}, ErrClaimed
	} else if err != nil && !moved {
		return URL{}, fmt.Errorf("refetch %s: %w", key, err)
	}
	u := lost
	u.State, u.Page, u.outcome, u.Owner, u.Lease = Queued, nil, "", ownerTag(owner), now.Add(lease)
	add := map[string]int64{string(Fetched): -1}
	if lost.Page != nil && lost.Page.WARCKey != "" {
		add[counterPages] = -1 // its page is stored again, and counted again, when it is recorded
	}
	return u, s.counts.count(ctx, crawl, add)
}

// refetchedIn reports whether the group's item g shows the URL with the key taken back as Refetch
// takes it, by the owner me until the lease's end: Refetch's own write, applied before, whose
// replay this is (a lease's end to the millisecond is this call's).
func refetchedIn(g table.Item, key, me string, until int64) bool {
	return !g.Has(outcomeAttr(key)) && g.String(ownerAttr(key)) == me && g.Int(leaseAttr(key)) == until
}

// SkipQueued moves a queued URL of group that no message holds to skipped: its budget ran out
// before its fetch message was sent, or its page was already fetched as another URL's redirect
// target.
func (s *URLs) SkipQueued(ctx context.Context, crawl, group, key string, cause error) error {
	class := errclass.Of(cause)
	expires, err := s.crawls.expiry(ctx, crawl)
	if err != nil {
		return err
	}
	// A random token: a replay of this write finds its own outcome (stored.W), not a skip of the
	// same URL by another call.
	v, err := encodeOutcome(crawl, Outcome{Key: key, State: Skipped, Cause: cause}, randomTag())
	if err != nil {
		return fmt.Errorf("skip %s: %w", key, err)
	}
	_, err = s.t.Update(ctx, groupKey(crawl, group), table.Update{Set: map[string]any{
		outcomeAttr(key): v, table.TTLAttr: expires,
	}}, table.And(table.NotExists(ownerAttr(key)), table.NotExists(outcomeAttr(key)), table.NotExists(tombstoneAttr(key))))
	if cf, done := table.IsConditionFailed(err); done && cf.Item.String(outcomeAttr(key)) != v {
		return nil
	} else if err != nil && !done {
		return fmt.Errorf("skip %s: %w", key, err)
	}
	return s.counts.count(ctx, crawl, map[string]int64{string(Skipped): 1, "class_" + string(class): 1})
}

// Unadmit takes back an admission that AdmitIn just made in group, as long as no message has
// claimed the URL since: a tombstone in the group keeps any fetch message sent for it meanwhile
// (by a concurrent delivery of the same Links message) from claiming it, then the URL's item goes
// and is uncounted, so that the redelivered Links message admits the URL afresh. An item that
// AdmitIn admitted afresh over an earlier un-admission (readmit, attrFrom) stays, tombstoned, and
// counted: the redelivery admits it afresh again, with no count, and only the first admission's
// Unadmit deletes and uncounts the URL.
func (s *URLs) Unadmit(ctx context.Context, crawl, group, key string) error {
	expires, err := s.crawls.expiry(ctx, crawl)
	if err != nil {
		return err
	}
	_, err = s.t.Update(ctx, groupKey(crawl, group), table.Update{Set: map[string]any{
		tombstoneAttr(key): true, table.TTLAttr: expires,
	}}, table.And(table.NotExists(ownerAttr(key)), table.NotExists(outcomeAttr(key))))
	if _, moved := table.IsConditionFailed(err); moved {
		return nil // a message holds it or is done with it: it is theirs now
	}
	if err != nil {
		return fmt.Errorf("unadmit %s: %w", key, err)
	}
	inGroup := table.Eq(attrGroup, group)
	if group == key {
		inGroup = table.NotExists(attrGroup) // admitted as a group of its own
	}
	err = s.t.Delete(ctx, URLKey(crawl, key), table.And(table.Eq(attrState, string(Queued)), inGroup, table.NotExists(attrFrom)))
	cf, moved := table.IsConditionFailed(err)
	if err != nil && !moved {
		// Maybe applied with its answer lost for good: the item read back tells, as a replay would.
		delErr := err
		if cf, err = s.readBack(ctx, URLKey(crawl, key), delErr); err != nil {
			return fmt.Errorf("unadmit %s: %w", key, err)
		}
		if len(cf.Item) > 0 && admittedFrom(cf.Item, group, key) {
			return fmt.Errorf("unadmit %s: %w", key, delErr) // not applied: half done (see readmit)
		}
	}
	if cf != nil && len(cf.Item) > 0 && admittedFrom(cf.Item, group, key) {
		return nil // still this admission's item, moved on or admitted afresh: not this call's to uncount
	}
	// Deleted, by this call or by its earlier attempt whose replay this is: the item found, if any,
	// is a later admission's, which counted itself. Nothing else deletes an item of this admission,
	// or of one made afresh over its un-admission (readmit): a crawl's erase does not count.
	return s.counts.count(ctx, crawl, map[string]int64{"seen": -1})
}

// admittedFrom reports whether the URL item it is the admission made in group (the URL's own
// group when group is key), or one that AdmitIn made afresh over its un-admission (readmit).
func admittedFrom(it table.Item, group, key string) bool {
	if group == key {
		return !it.Has(attrGroup) || it.String(attrFrom) == group
	}
	return it.String(attrGroup) == group || it.String(attrFrom) == group
}

// Done reports whether the URL with the key is done in its group: it has an outcome that no
// redrive may take back, or its admission was taken back (a tombstone); and, when it is not,
// whether another owner's live claim holds it, one that does not pass to owner (the fetch message's
// id) from prev (the owners that re-queued it as this message, message.Target.Prev). A message of
// such a URL is a duplicate, which ClaimGroup would refuse: Done lets one that came back to wait (a
// re-queue, a retry, a redelivery) end before it books a politeness slot, with a read where a
// claim would take a write.
func (s *URLs) Done(ctx context.Context, crawl, group, key, owner string, prev []string) (done, held bool, err error) {
	g, err := s.t.Get(ctx, groupKey(crawl, group))
	if errors.Is(err, table.ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read the group of %s: %w", key, err)
	}
	if g.Has(tombstoneAttr(key)) || g.Has(outcomeAttr(key)) && !g.Bool(redriveAttr(key)) {
		return true, false, nil
	}
	return false, heldByAnother(g, key, ownerTag(owner), passedFrom(prev), s.now()), nil
}

// passedFrom are the tags of the owners prev, whose claims pass to the message that names them.
func passedFrom(prev []string) map[string]bool {
	was := make(map[string]bool, len(prev))
	for _, p := range prev {
		was[ownerTag(p)] = true
	}
	return was
}

// heldByAnother reports whether the group item g shows the URL with the key claimed by an owner
// other than me (an owner's tag) whose lease has not ended, and whose claim does not pass to me
// (was holds the tags of the owners it passes from).
func heldByAnother(g table.Item, key, me string, was map[string]bool, now time.Time) bool {
	owned := g.String(ownerAttr(key))
	return owned != "" && owned != me && !was[owned] && g.Int(leaseAttr(key)) >= now.UnixMilli()
}
