package crawlstate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/flatjson"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A tally (Tally, Drained) counts as it reads, so that its memory does not grow with the crawl's
// URLs: a crawl of a million pages is tallied in the schedule function's memory and time. It reads
// three kinds of item:
//
//   - (Drained only) the crawl's messages, m#: the parse marks, kept as 8-byte hashes (one a parse
//     message: a fetch batch's WARC file), and the Links messages named sent and marked admitted
//     (links.go), kept as 8-byte hashes (one a Links message) and matched at the end;
//   - the groups, r#: each outcome counts its URL by state and class; a fetched page whose parse
//     message has no mark is unparsed;
//   - the URL items, u#: each is seen; one refused before its admission counts by its state.
//
// Both read the crawl's partitions and nothing else (EachInCrawl), so a tally costs what the crawl
// holds whatever else the table does. Tally reads the groups, then the URL items, so that a failed
// URL's item fills its place in Counters.GaveUp. Drained reads all three kinds in one query of each
// partition, in any order. A page read before its parse message's mark is held as the 8-byte hash
// of its one-page message's name until the end.
//
// Every outcome in a group is of a URL admitted in that group, whose item is queued: AdmitIn
// writes the item before any message can carry the URL, a claim and so an outcome needs a message,
// Unadmit deletes an item only after its tombstone keeps every claim off, Reopen turns the outcome
// into a tombstone before it deletes the item, and Erase removes the
// outcomes before the items. So the URLs left queued are the queued items less the outcomes, and
// no URL's outcome need be held until its item is read. (A URL item's own parsed attribute, of
// items from before parse messages were marked, is not read: nothing writes it any more.)

// Drained tallies the crawl's items exactly (as Tally does) and counts the work they still show:
// URLs not ended, fetched pages not parsed, and Links messages sent and not yet admitted (named by
// a parse mark or a note, not marked admitted: links.go). It queries each of the crawl's partitions once,
// and counts as it reads (tally.go): for the end of a crawl, not for its progress. Its counters list no failed
// URLs (GaveUp); Tally's do.
func (s *URLs) Drained(ctx context.Context, crawl string) (Counters, Left, error) {
	return s.tally(ctx, crawl, true)
}

// Tally counts the crawl's URL items by state and class with a scan. Unlike Counters, which are
// updated beside each transition and may drift by one if the process dies between the two writes,
// Tally is exact; it reads every item, so it is for summaries at the end of a run, not for progress.
func (s *URLs) Tally(ctx context.Context, crawl string) (Counters, error) {
	c, _, err := s.tally(ctx, crawl, false)
	return c, err
}

// tally is Tally, and with left also the work the items show left (Drained).
func (s *URLs) tally(ctx context.Context, crawl string, left bool) (Counters, Left, error) {
	t := newTallier(crawl, left)
	var err error
	if left {
		err = t.readAll(ctx, s.t)
	} else {
		err = t.readInOrder(ctx, s.t)
	}
	if err != nil {
		return Counters{}, Left{}, err
	}
	return s.complete(ctx, t)
}

func newTallier(crawl string, left bool) *tallier {
	return &tallier{crawl: crawl, withLeft: left, c: Counters{Classes: map[errclass.Class]int64{}}, gaveUp: map[string]int{}}
}

// complete is the tally t once every item is read: the URLs left queued, and what is counted
// and not recorded on items.
func (s *URLs) complete(ctx context.Context, t *tallier) (Counters, Left, error) {
	if t.left.Queued = t.queued - t.outcomes; t.left.Queued < 0 {
		return Counters{}, Left{}, fmt.Errorf("tally crawl %s: %d outcomes in its groups and %d queued urls: outcomes of urls with no item",
			t.crawl, t.outcomes, t.queued)
	}
	t.c.GaveUp = slices.DeleteFunc(t.c.GaveUp, func(u URL) bool { return u.Key == "" }) // none should be left
	if err := s.addCounted(ctx, t.crawl, &t.c, !t.withLeft); err != nil {
		return Counters{}, Left{}, err
	}
	return t.c, t.left, nil
}

// readInOrder reads the groups, then the URL items: a failed URL's item, read after its outcome,
// fills its place in the list of failed URLs (Counters.GaveUp).
func (t *tallier) readInOrder(ctx context.Context, tb table.Table) error {
	if err := EachInCrawl(ctx, tb, t.crawl, groupKind, func(sort string, it table.Item) error {
		return t.group(sort[len(groupKind):], it)
	}); err != nil {
		return fmt.Errorf("tally the groups of crawl %s: %w", t.crawl, err)
	}
	if err := EachInCrawl(ctx, tb, t.crawl, urlKind, func(sort string, it table.Item) error {
		t.url(urlFrom(sort[len(urlKind):], it))
		return nil
	}); err != nil {
		return fmt.Errorf("tally the urls of crawl %s: %w", t.crawl, err)
	}
	return nil
}

// readAll reads the crawl's messages, groups and URL items in one query of each of its
// partitions, in any order. It lists no failed URLs (Drained's counters have no GaveUp): an outcome and its URL's
// item come in any order. It is a resumable tally (tallystep.go) read in one step.
func (t *tallier) readAll(ctx context.Context, tb table.Table) error {
	t.resumable()
	var cur cursors
	if _, err := t.readParts(ctx, tb, &cur, 0, func(int64) bool { return false }); err != nil {
		return err
	}
	t.countLeft()
	return nil
}

// resumable readies t to read the crawl's items in any order, over one or more steps: it lists no
// failed URLs, and holds the parse marks, the pages read before theirs, and the Links messages'
// names.
func (t *tallier) resumable() {
	t.gaveUp, t.marks, t.pages = nil, map[uint64]bool{}, map[uint64][]uint64{}
}

// item counts one item of the crawl, of any kind, read in any order (readAll).
func (t *tallier) item(sort string, it table.Item) error {
	switch {
	case strings.HasPrefix(sort, groupKind):
		return t.group(sort[len(groupKind):], it)
	case strings.HasPrefix(sort, urlKind):
		t.url(urlFrom(sort[len(urlKind):], it))
	case strings.HasPrefix(sort, parsedKind):
		rest := sort[len(parsedKind):]
		switch {
		case strings.HasPrefix(rest, linksAdmittedLetter):
			t.admitted = appendNames(t.admitted, it.String(attrLinks))
		case strings.HasPrefix(rest, linksNoteLetter):
			t.named = appendNames(t.named, it.String(attrLinks))
		default:
			if h, ok := markHashOfKey(rest); ok {
				t.marks[h] = true
			}
			t.named = appendNames(t.named, it.String(attrLinks))
		}
	}
	return nil
}

// countLeft counts, once every item is read, the Links messages named and not admitted, and the
// fetched pages whose parse message has no mark.
func (t *tallier) countLeft() {
	t.named, t.admitted = sortedSet(t.named), sortedSet(t.admitted)
	for _, n := range t.named {
		if _, ok := slices.BinarySearch(t.admitted, n); !ok {
			t.left.Links++
		}
	}
	for msg, pages := range t.pages {
		if t.marks[msg] {
			continue
		}
		for _, p := range pages {
			if !t.marks[p] {
				t.left.Unparsed++
			}
		}
	}
}

// addCounted adds to c, a tally, what is counted and not recorded on URL items, and with notes the
// hosts the crawl throttled or whose circuit it opened (Drained, for the crawl's end, does
// without: Counters.Throttled, Circuits).
func (s *URLs) addCounted(ctx context.Context, crawl string, c *Counters, notes bool) error {
	counted, err := s.crawls.counters(ctx, crawl, notes)
	if err != nil {
		return err
	}
	c.ParseErrors, c.Cost, c.Stopped, c.Throttled, c.Circuits = counted.ParseErrors, counted.Cost, counted.Stopped, counted.Throttled, counted.Circuits
	c.StopRefused, c.RobotsRefused, c.Responses = counted.StopRefused, counted.RobotsRefused, counted.Responses
	// These are counted, not recorded on URL items: a page's parse error, a quarantined message,
	// a link not admitted once the crawl's money ran out.
	for _, cl := range []errclass.Class{errclass.Parse, errclass.Poison, errclass.Budget} {
		if n := counted.Classes[cl]; n > 0 {
			c.Classes[cl] = n
		}
	}
	return nil
}

// tallier is a tally under way.
type tallier struct {
	crawl    string
	withLeft bool
	c        Counters
	left     Left
	// marks are the parse marks read (markHash); pages the fetched pages read before their parse
	// message's mark, by the hash of its name: the hashes of their one-page messages' names.
	marks map[uint64]bool
	pages map[uint64][]uint64
	// named and admitted are the hashes of the Links messages' names named sent and marked
	// admitted (appendNames): sorted and rid of repeats when they grow, and at the end.
	named, admitted []uint64
	// outcomes are the outcomes read in the groups; queued the queued URL items.
	outcomes, queued int64
	// gaveUp holds, for a failed URL listed in c.GaveUp from its group, its index there until
	// its item is read (by group + "#" + its short key); nil lists none.
	gaveUp map[string]int
}

// appendNames appends the hashes of the joined names to hs. A full slice is sorted and rid of
// repeats before it grows: the names of one batch's Links messages are on each of its marks.
func appendNames(hs []uint64, joined string) []uint64 {
	for n := range strings.SplitSeq(joined, linksSep) {
		if n == "" {
			continue
		}
		if len(hs) == cap(hs) && len(hs) >= 1024 {
			hs = sortedSet(hs)
		}
		h := fnv.New64a()
		h.Write([]byte(n))
		hs = append(hs, h.Sum64())
	}
	return hs
}

// sortedSet sorts hs and drops its repeats.
func sortedSet(hs []uint64) []uint64 {
	slices.Sort(hs)
	return slices.Compact(hs)
}

// markHashOfKey is the hash of a parse mark, from its sort key after its kind: the first 8
// bytes of the digest parsedKey writes in hex.
func markHashOfKey(rest string) (uint64, bool) {
	if len(rest) < 16 {
		return 0, false
	}
	var b [8]byte
	if _, err := hex.Decode(b[:], []byte(rest[:16])); err != nil {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[:]), true
}

// markHash is the hash of the parse mark of the message named name (as markHashOfKey reads it).
func markHash(name string) uint64 {
	sum := sha256.Sum256([]byte(name))
	return binary.BigEndian.Uint64(sum[:8])
}

// page notes a fetched page of file at offset, carried by the parse message msg: unparsed unless
// msg or the page's one-page message is marked, which a mark read later may yet say.
func (t *tallier) page(file, msg string, offset int64) {
	m := markHash(msg)
	if t.marks[m] {
		return
	}
	t.pages[m] = append(t.pages[m], markHash(message.PageName(file, offset)))
}

// group counts the outcomes a group's item holds.
func (t *tallier) group(group string, it table.Item) error {
	for name, v := range it {
		if len(name) < 2 || !strings.HasPrefix(name, outcomeLetter) {
			continue // the item's own attributes, and what it holds of a URL besides its outcome
		}
		raw, _ := v.(string)
		if err := t.outcome(group, name[1:], raw, fileOf(it, raw)); err != nil {
			return fmt.Errorf("outcome %s of group %s: %w", name, group, err)
		}
	}
	return nil
}

// outcome counts one URL's outcome, as its group holds it; file is the WARC file it names by its
// id in the group's item (fileOf).
func (t *tallier) outcome(group, short, raw, file string) error {
	st, err := readTallied(raw, file)
	if err != nil {
		return err
	}
	state := stateOf(st.S)
	if state == "" {
		return fmt.Errorf("unknown state %q", st.S)
	}
	t.outcomes++
	t.count(state, st.C)
	if state == Failed && t.gaveUp != nil && len(t.c.GaveUp) < MaxGaveUp {
		t.gaveUp[group+"#"+short] = len(t.c.GaveUp)
		t.c.GaveUp = append(t.c.GaveUp, URL{State: Failed, Class: st.C, Detail: st.D}) // its URL comes with its item
	}
	if !t.withLeft || state != Fetched {
		return nil
	}
	key := st.K
	if st.B != "" {
		key = pagesPrefix + t.crawl + "/" + st.B + warcSuffix
	}
	if key == "" {
		return nil // no page stored
	}
	msg := st.M
	if st.P != nil {
		msg = message.PartName(key, *st.P)
	}
	t.page(key, msg, st.O)
	return nil
}

// url counts a URL item: one refused before its admission (or written before outcomes were held
// in groups) by its own state.
func (t *tallier) url(u URL) {
	t.c.Seen++
	if u.State == Queued {
		t.queued++
		k := GroupOf(u) + "#" + shortKey(u.Key)
		if i, ok := t.gaveUp[k]; ok {
			g := t.c.GaveUp[i]
			u.State, u.Class, u.Detail = g.State, g.Class, g.Detail
			t.c.GaveUp[i] = u
			delete(t.gaveUp, k)
		}
		return
	}
	t.count(u.State, u.Class)
	if u.State == Failed && t.gaveUp != nil && len(t.c.GaveUp) < MaxGaveUp {
		t.c.GaveUp = append(t.c.GaveUp, u)
	}
	if t.withLeft && u.State == Fetched && !u.Parsed && u.Page != nil {
		t.page(u.Page.WARCKey, u.Page.Msg, u.Page.Offset)
	}
}

// count counts a URL in state with class.
func (t *tallier) count(state State, class errclass.Class) {
	switch state {
	case Fetched:
		t.c.Fetched++
	case Skipped:
		t.c.Skipped++
	case Failed:
		t.c.Failed++
	case Stopped:
		t.c.StoppedURLs++
	}
	if state.Terminal() && class != "" {
		t.c.Classes[class]++
	}
}

// tallied is what a tally reads of an outcome: its state's letter, class and detail, and where a
// fetched page is stored and which parse message carries it.
type tallied struct {
	S string         `json:"s"`
	C errclass.Class `json:"c"`
	D string         `json:"d"`
	K string         `json:"k"`
	B string         `json:"b"`
	O int64          `json:"o"`
	P *int           `json:"p"`
	M string         `json:"m"`
}

// readTallied reads what a tally reads of a stored outcome; file is the WARC file it names by its
// id in its group's item. An outcome in the JSON form of before (outcomecode.go) is read flat
// (flatjson) when it is, as encoding/json would read it into tallied, and by encoding/json
// otherwise (a revisit's nested un, or a document flatjson does not read).
func readTallied(raw, file string) (tallied, error) {
	if !strings.HasPrefix(raw, "{") {
		st, err := decodeOutcome(raw, file)
		if err != nil {
			return tallied{}, err
		}
		return tallied{S: st.S, C: st.C, D: st.D, K: st.K, B: st.B, O: st.O, P: st.P, M: st.M}, nil
	}
	var st tallied
	flat := true
	str := func(dst *string, v flatjson.Value) {
		s, ok := v.String()
		*dst, flat = s, flat && ok // encoding/json reports a value of another type
	}
	read := flatjson.Members(raw, func(name string, v flatjson.Value) {
		switch name {
		case "s":
			str(&st.S, v)
		case "c":
			var c string
			str(&c, v)
			st.C = errclass.Class(c)
		case "d":
			str(&st.D, v)
		case "k":
			str(&st.K, v)
		case "b":
			str(&st.B, v)
		case "m":
			str(&st.M, v)
		case "o", "p":
			n, ok := v.Any().(int64)
			if !ok || n != int64(int(n)) {
				flat = false
				return
			}
			if name == "o" {
				st.O = n
			} else {
				p := int(n)
				st.P = &p
			}
		default:
			// encoding/json matches a field's name to a member's without regard to case ("S", or
			// the Kelvin sign for "k"): such a document is left to it.
			for _, f := range []string{"s", "c", "d", "k", "b", "m", "o", "p"} {
				if strings.EqualFold(name, f) {
					flat = false
				}
			}
		}
	})
	if read && flat {
		return st, nil
	}
	st = tallied{}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return tallied{}, err
	}
	return st, nil
}
