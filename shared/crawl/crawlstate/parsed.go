package crawlstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// MarkMessageParsed records that the parse message named name (message.Parse.Name) is done. It
// returns false when it already was.
func (s *URLs) MarkMessageParsed(ctx context.Context, crawl, name string) (bool, error) {
	return s.MarkMessageParsedIn(ctx, crawl, name, "")
}

// attrRecords is the parse mark's key of the records file that holds the message's records.
const attrRecords = "records"

// MarkMessageParsedIn is MarkMessageParsed, noting the key of the records file that holds the
// message's records (shared/crawl/records), for a recrawl to find them again (RecordsOf). The key rides
// on the same write.
func (s *URLs) MarkMessageParsedIn(ctx context.Context, crawl, name, records string) (bool, error) {
	return s.MarkMessageParsedLinks(ctx, crawl, name, records, nil)
}

// IsMessageParsed reports whether the parse message named name is done.
func (s *URLs) IsMessageParsed(ctx context.Context, crawl, name string) (bool, error) {
	_, err := s.t.Get(ctx, parsedKey(crawl, name))
	if errors.Is(err, table.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read whether %s is parsed: %w", name, err)
	}
	return true, nil
}

// PageParsed reports whether the page of a fetched URL was parsed: the parse message of its file's
// part is marked done, or the one-page message a fetcher sends again for it (message.PageName),
// or (an item from before messages were marked) the URL itself is.
func (s *URLs) PageParsed(ctx context.Context, crawl string, u URL) (bool, error) {
	if u.Parsed || u.Page == nil {
		return u.Parsed, nil
	}
	for _, name := range []string{u.Page.Msg, message.PageName(u.Page.WARCKey, u.Page.Offset)} {
		if name == "" {
			continue
		}
		if done, err := s.IsMessageParsed(ctx, crawl, name); done || err != nil {
			return done, err
		}
	}
	return false, nil
}

// RecordsOf returns the key of the records file that holds the records of the parse message named
// name, as MarkMessageParsedIn noted it: "" when the message is not parsed, or was marked without
// one.
func (s *URLs) RecordsOf(ctx context.Context, crawl, name string) (string, error) {
	it, err := s.t.Get(ctx, parsedKey(crawl, name))
	if errors.Is(err, table.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the records of %s: %w", name, err)
	}
	return it.String(attrRecords), nil
}
