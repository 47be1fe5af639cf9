package crawlstate

import (
	"context"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// An erasure (crawl purge, docs/erasure.md) removes what the state holds of a URL, and moves
// the stored page of a URL whose WARC file was rewritten without another page's records.

// Erase deletes what the crawl's state holds of the URLs with these keys (urlnorm.Key): their
// claims, outcomes and tombstones in every group's item, then their items. Run again after
// a failure, it finishes what the failed run left: the items go last, so a URL whose outcome is
// left still has its item for the next run to find.
func (s *URLs) Erase(ctx context.Context, crawl string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	names := map[string]bool{}
	for _, k := range keys {
		for _, attr := range []func(string) string{outcomeAttr, redriveAttr, ownerAttr, leaseAttr, tombstoneAttr} {
			names[attr(k)] = true
		}
	}
	type change struct {
		key    table.Key
		remove []string
	}
	var changes []change
	err := EachInCrawl(ctx, s.t, crawl, groupKind, func(sort string, it table.Item) error {
		var rm []string
		for name := range it {
			if names[name] {
				rm = append(rm, name)
			}
		}
		if len(rm) > 0 {
			changes = append(changes, change{groupKey(crawl, sort[len(groupKind):]), rm})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("erase from the outcomes of %s: %w", crawl, err)
	}
	for _, c := range changes {
		if _, err := s.t.Update(ctx, c.key, table.Update{Remove: c.remove}, table.ItemExists()); err != nil {
			if _, gone := table.IsConditionFailed(err); !gone {
				return fmt.Errorf("erase outcomes from %s: %w", c.key, err)
			}
		}
	}
	for _, k := range keys {
		if err := s.t.Delete(ctx, URLKey(crawl, k), table.Cond{}); err != nil {
			return fmt.Errorf("erase the item of %s in %s: %w", k, crawl, err)
		}
	}
	return nil
}

// MovePage says that u's stored records are where to says now, in the same files: its own record
// (to.Offset and to.Length: a response, or a revisit record) and, for a revisit, the payload it
// reuses (to.Unchanged.Payload), in its outcome in its group. The write is conditional on what u
// was read with, so a page that changed since is not overwritten.
//
// A page parsed under the name of its one-page parse message (message.PageName), which holds the
// page's old offset, keeps that name as its message's: PageParsed and the drain's tally look the
// mark up by the page's offset otherwise, and would no longer find it.
func (s *URLs) MovePage(ctx context.Context, crawl string, u URL, to Page) error {
	if u.outcome == "" || u.Page == nil {
		return nil
	}
	st, err := decodeOutcome(u.outcome, usualBatch(crawl, u.Page.WARCKey))
	if err != nil {
		return fmt.Errorf("outcome of %s: %w", u.Key, err)
	}
	if to.Offset != u.Page.Offset {
		if err := s.keepPageMark(ctx, crawl, u, &st); err != nil {
			return err
		}
	}
	st.O, st.L = to.Offset, to.Length
	if st.UN != nil && to.Unchanged != nil {
		st.UN.Payload = to.Unchanged.Payload
	}
	b := st.text()
	attr := outcomeAttr(u.Key)
	_, err = s.t.Update(ctx, groupKey(crawl, GroupOf(u)), table.Update{Set: map[string]any{attr: b}},
		table.Eq(attr, u.outcome))
	if cf, moved := table.IsConditionFailed(err); moved && cf.Item.String(attr) == b {
		return nil // its own move, sent again by the SDK
	}
	if err != nil {
		return fmt.Errorf("move the page of %s in its outcome: %w", u.Key, err)
	}
	return nil
}

// keepPageMark names, in st, the one-page parse message of u's page at its old offset as the
// page's message, when that message is marked parsed and the one st names is not.
func (s *URLs) keepPageMark(ctx context.Context, crawl string, u URL, st *stored) error {
	if u.Page.Msg != "" {
		if done, err := s.IsMessageParsed(ctx, crawl, u.Page.Msg); done || err != nil {
			return err
		}
	}
	name := message.PageName(u.Page.WARCKey, u.Page.Offset)
	done, err := s.IsMessageParsed(ctx, crawl, name)
	if done {
		st.M, st.P = name, nil
	}
	return err
}
