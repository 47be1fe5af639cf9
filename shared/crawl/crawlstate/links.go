package crawlstate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The Links messages in flight, for the crawl's end (DESIGN invariant 11): a Links message that was
// sent and not yet admitted leaves no URL item, so the crawl's end must see it another way. Every
// Links message is named (by frontier.Source, a digest of its content, the same for every delivery
// of it) in an item of the crawl written once it is sent, and named again in another once schedule
// is done with it:
//
//   - parse names the Links messages it sent on its parse mark (MarkMessageParsedLinks), which it
//     writes after the send: a fetched page whose mark is missing is unparsed, and a page whose
//     mark is there names what it sent;
//   - schedule's own Links messages (a seed file's) and the CLI's are named by a note
//     (NoteLinksSent), written before the crawl's first drain check is sent or before the send;
//   - schedule marks the Links messages of a batch admitted (MarkLinksAdmitted), in one put per
//     crawl of the batch, once every URL of each was admitted or refused and their fetch messages
//     were sent, whatever became of them (admitted, known, refused, out of budget, crawl stopped).
//
// Drained counts the Links messages named and not marked admitted. The notes and the admitted
// marks share the parse marks' key prefix, m#<crawl>#, so one scan reads them all:
//
//	m#<crawl>#<32 hex>   a parse mark (parsedKey), naming the Links messages it sent in attrLinks
//	m#<crawl>#L<32 hex>  a note of Links messages sent by schedule or the CLI
//	m#<crawl>#A<32 hex>  Links messages admitted
//
// A parse mark written before the names existed names nothing: it keeps no end from coming, and
// the checks' quiet time waits for its Links messages as it did before (package finish).

// attrLinks is the names of Links messages an item of the crawl's messages holds, joined by
// linksSep.
const (
	attrLinks = "links"
	linksSep  = " "
)

// maxLinksPerItem bounds the names one item holds: 17 bytes each, some 34 KB (an item holds at most
// 400 KB, and is billed a write unit a kilobyte).
const maxLinksPerItem = 2000

// The letters after m#<crawl># of a note of Links messages sent and of a mark of Links admitted.
const (
	linksNoteLetter     = "L"
	linksAdmittedLetter = "A"
)

// linksItemKey is the key of a note or an admitted mark (letter) whose identity is id.
func linksItemKey(crawl, letter, id string) table.Key {
	sum := sha256.Sum256([]byte(id))
	return inCrawl(crawl, parsedKind+letter, hex.EncodeToString(sum[:16]))
}

// MarkMessageParsedLinks is MarkMessageParsedIn, naming on the mark the Links messages the parse
// message sent (their frontier.Source), after it sent them: until each is marked admitted
// (MarkLinksAdmitted), Drained counts it left. Names beyond what one item holds, and those of a
// delivery that finds the mark written already by another (two deliveries at once), go to notes.
func (s *URLs) MarkMessageParsedLinks(ctx context.Context, crawl, name, records string, links []string) (bool, error) {
	return s.MarkMessageParsedPages(ctx, crawl, name, records, links, 0)
}

// MarkMessageParsedPages is MarkMessageParsedLinks for a message of pages pages: the write that
// makes the mark counts them parsed, and the Links messages it names named (endcount.go). A replay
// of that write, whose answer was lost, finds its own token on the mark and counts them too.
func (s *URLs) MarkMessageParsedPages(ctx context.Context, crawl, name, records string, links []string, pages int) (bool, error) {
	expires, err := s.crawls.expiry(ctx, crawl)
	if err != nil {
		return false, err
	}
	var inline []string
	if len(links) <= maxLinksPerItem {
		inline = links
	} else if err := s.NoteLinksSent(ctx, crawl, "parse "+name, links); err != nil {
		return false, err
	}
	tok := randomTag()
	item := table.Item{attrUpdated: s.now().UnixMilli(), table.TTLAttr: expires, attrTok: tok}
	if records != "" {
		item[attrRecords] = records
	}
	if len(inline) > 0 {
		item[attrLinks] = strings.Join(inline, linksSep)
	}
	err = s.t.Put(ctx, parsedKey(crawl, name), item, table.ItemNotExists())
	if cf, done := table.IsConditionFailed(err); done && cf.Item.String(attrTok) != tok {
		if len(inline) > 0 && !namesAll(cf.Item.String(attrLinks), inline) {
			// Another delivery marked the message first, with the Links messages it sent: name
			// this delivery's too.
			return false, s.NoteLinksSent(ctx, crawl, "parse "+name, inline)
		}
		return false, nil
	} else if err != nil && !done {
		return false, fmt.Errorf("mark %s parsed: %w", name, err)
	}
	if pages > 0 {
		if err := s.counts.count(ctx, crawl, map[string]int64{counterPagesParsed: int64(pages)}); err != nil {
			return true, err
		}
	}
	return true, s.countLinks(ctx, crawl, counterLinksNamed, inline)
}

// namesAll reports whether the joined names held name every one of names.
func namesAll(held string, names []string) bool {
	have := map[string]bool{}
	for _, n := range strings.Split(held, linksSep) {
		have[n] = true
	}
	for _, n := range names {
		if !have[n] {
			return false
		}
	}
	return true
}

// NoteLinksSent names Links messages of the crawl (their frontier.Source) as sent by by (schedule
// starting a crawl from a seed file, the CLI): until each is marked admitted, Drained counts it
// left. The note is written before the first drain check of the crawl or before the send, so no
// check can miss them: a Links message named and never sent keeps the crawl from its end until
// it is sent. The item is the same for the same names, so a replay or a redelivery finds it
// written and leaves it.
func (s *URLs) NoteLinksSent(ctx context.Context, crawl, by string, links []string) error {
	return s.putLinks(ctx, crawl, linksNoteLetter, by, links)
}

// MarkLinksAdmitted marks the crawl's Links messages named (their frontier.Source) admitted: each
// URL of each was admitted or refused, and the fetch messages of those admitted were sent. One put
// for up to maxLinksPerItem names, on condition that the item is not there: a replay, or the same
// batch delivered again, finds it written.
func (s *URLs) MarkLinksAdmitted(ctx context.Context, crawl string, links []string) error {
	return s.putLinks(ctx, crawl, linksAdmittedLetter, "admitted", links)
}

// putLinks writes names in items of letter, keyed by by and the names they hold, and counts the
// names of each item it writes first (endcount.go): a note's named, an admitted mark's admitted.
// An item written already (a replay of the same names) is left as it is and not counted again; the
// write that made it, sent again by the SDK, finds its token and counts.
func (s *URLs) putLinks(ctx context.Context, crawl, letter, by string, links []string) error {
	if len(links) == 0 {
		return nil
	}
	expires, err := s.crawls.expiry(ctx, crawl)
	if err != nil {
		return err
	}
	counter := counterLinksNamed
	if letter == linksAdmittedLetter {
		counter = counterLinksAdmitted
	}
	i := 0
	for names := range slices.Chunk(links, maxLinksPerItem) {
		joined := strings.Join(names, linksSep)
		key := linksItemKey(crawl, letter, by+"\x00"+strconv.Itoa(i)+"\x00"+joined)
		tok := randomTag()
		item := table.Item{attrLinks: joined, attrUpdated: s.now().UnixMilli(), table.TTLAttr: expires, attrTok: tok}
		err := s.t.Put(ctx, key, item, table.ItemNotExists())
		cf, there := table.IsConditionFailed(err)
		switch {
		case there && cf.Item.String(attrTok) != tok:
			// written before, and counted then
		case err != nil && !there:
			return fmt.Errorf("name %d links messages of crawl %s (%s): %w", len(names), crawl, by, err)
		default:
			if err := s.countLinks(ctx, crawl, counter, names); err != nil {
				return err
			}
		}
		i++
	}
	return nil
}
