package crawlstate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/safelog"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A URL's claim and outcome live in its group's item, "r#<crawl>#<group>", not in its own. The
// group is fixed when the URL is admitted (AdmitIn, on the URL's item): schedule gives the URLs
// of a batch groups of at most message.MaxPackedURLs, one URL of a host each, or runs of one
// polite host's URLs (frontier/runs.go), and sends each
// group's URLs in one fetch message (two or more only when their slots come due apart). Every
// message that carries the URL names its group: the first send, a Links message's redelivery that
// sends it again (it reads the group back from the item its admission found), a fetcher's re-queue
// and a redrive. So the fetcher claims all of a message's URLs in one conditional update of their
// group's item, and records their outcomes in a second: two writes a message, where a claim
// write on each URL's item cost one a URL.
//
// For each of its URLs the group's item holds, named by the first 16 hex digits of the URL's key:
//
//	w<k> the claim's owner (ownerTag of the fetch message's id), l<k> its lease (Unix ms);
//	o<k> the outcome (outcomecode.go), x<k> true when the outcome is a redrivable failure;
//	t<k> a tombstone: the admission was taken back (Unadmit), and no message may claim the URL.
//
// and, for each WARC file its outcomes name, f<id> the file's <day>/<batch> (fileAttr). Its
// writes set no updatedAt: nothing reads it, and the item is billed by its bytes.
//
// A claim holds when the URL has no outcome (or a redrivable one, after a redrive) and no
// tombstone, and no other owner's lease is live; the message that re-queued a URL carries its
// owner (message.Target.Prev), so its claim passes to the new message without a write to give it
// back. An outcome is written only while its owner still holds the claim: an owner whose lease
// ran out and whose URL another took over records nothing, and nothing is counted twice.
//
// A URL admitted without a group (Admit) is a group of its own, named by its key.

// groupKey is the table key of a group's item.

// The attributes of a URL in its group's item: a letter, then the URL's short key.
const (
	outcomeLetter   = "o"
	redriveLetter   = "x"
	ownerLetter     = "w"
	leaseLetter     = "l"
	tombstoneLetter = "t"
	// perURLAttrs are the letters of them all.
	perURLAttrs = outcomeLetter + redriveLetter + ownerLetter + leaseLetter + tombstoneLetter
)

func outcomeAttr(key string) string   { return outcomeLetter + shortKey(key) }
func redriveAttr(key string) string   { return redriveLetter + shortKey(key) }
func ownerAttr(key string) string     { return ownerLetter + shortKey(key) }
func leaseAttr(key string) string     { return leaseLetter + shortKey(key) }
func tombstoneAttr(key string) string { return tombstoneLetter + shortKey(key) }

func shortKey(key string) string {
	if len(key) > 16 {
		return key[:16]
	}
	return key
}

// OwnerTag is what a group's item holds of a claim's owner, and URL.Owner says: a fetch
// message's id is 36 bytes, and a group's item is billed by its size.
func OwnerTag(owner string) string { return ownerTag(owner) }

func ownerTag(owner string) string {
	if owner == "" {
		return ""
	}
	h := sha256.Sum256([]byte(owner))
	return base64.RawURLEncoding.EncodeToString(h[:9])
}

// GroupOf is the group of u: the one it was admitted in, or its own.
func GroupOf(u URL) string {
	if u.Group != "" {
		return u.Group
	}
	return u.Key
}

// Outcome is the terminal state of one URL of a group.
type Outcome struct {
	// Key is the URL's key (urlnorm.Key); URL is the URL as the fetch message named it.
	Key, URL string
	State    State
	// Prev is the URL's state when claimed: Failed for a URL redriven from the DLQ.
	Prev  State
	Cause error
	// Redrivable marks a failure whose message goes on to the dead-letter queue: a redrive of it
	// may claim the URL again.
	Redrivable bool
	// Page is where a fetched URL's response is stored.
	Page *Page
	// Owner is the claim's owner: the outcome is recorded only while it holds the URL.
	Owner string
	// Status and Bytes are the HTTP status and body size of the URL's last response, if it got
	// one, and Change what a recrawl found of its page: counted with the outcome (responses.go),
	// not stored.
	Status int
	Bytes  int64
	Change Change
}

// stored is an Outcome as its group's item holds it (outcomecode.go has the form it is written
// in; these names are those of the JSON form before it, still read): the state as a letter, the
// page's parts that can be derived left out, and its WARC file's name shortened when it is the
// usual pages/<crawl>/<day>/<batch>.warc.gz (a group's item is billed by its size, a unit a
// kilobyte, and holds up to message.MaxFetchURLs outcomes, a run's). Whether a failure may be
// redriven is the item's x<k> attribute.
type stored struct {
	S string         `json:"s"`
	C errclass.Class `json:"c,omitempty"`
	D string         `json:"d,omitempty"`
	K string         `json:"k,omitempty"` // the WARC file
	B string         `json:"b,omitempty"` // the WARC file, as <day>/<batch> of pages/<crawl>/<day>/<batch>.warc.gz
	O int64          `json:"o,omitempty"` // offset
	L int64          `json:"l,omitempty"` // length
	U string         `json:"u,omitempty"` // the final URL, when not the URL itself
	H int            `json:"h,omitempty"` // HTTP status
	T string         `json:"t,omitempty"` // content type
	F int64          `json:"f,omitempty"` // fetched at, Unix nanoseconds
	P *int           `json:"p,omitempty"` // the parse message's part, when named message.PartName(K, P)
	M string         `json:"m,omitempty"` // the parse message's name otherwise
	// The recrawl's: the validators, the payload digest, and a revisit's reference (recrawl.go).
	E  string             `json:"e,omitempty"`
	LM string             `json:"lm,omitempty"`
	G  string             `json:"g,omitempty"`
	UN *message.Unchanged `json:"un,omitempty"`
	// W is the write's token on an outcome without a page: the tag of the owner that recorded it
	// (writerTag), or a random one (SkipQueued). A write sent again because its answer was lost
	// finds its own outcome by it, where another owner's, the same but for W, is not its own. A
	// fetched outcome needs none: its WARC record's place is its own.
	W string `json:"w,omitempty"`
	// Ref is the id of the WARC file B in the group's item (fileAttr), when the outcome names it so.
	Ref string `json:"-"`
}

// randomTag is a write token of writerTag's size for a write that has no owner.
func randomTag() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24 and later)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// writerTag is an outcome's write token (stored.W) for owner: 8 characters of its tag, 48 bits,
// enough to tell the few owners of one URL apart.
func writerTag(owner string) string {
	if t := ownerTag(owner); len(t) > 8 {
		return t[:8]
	}
	return ownerTag(owner)
}

// stateCodes are the letters of the terminal states in stored.
var stateCodes = map[State]string{Fetched: "f", Skipped: "s", Failed: "x", Stopped: "t"}

// stateOf is the terminal state whose letter in stored is code, or "" for none.
func stateOf(code string) State {
	for state, c := range stateCodes {
		if c == code {
			return state
		}
	}
	return ""
}

// The usual WARC file name, which stored shortens.
const (
	pagesPrefix = layout.Pages
	warcSuffix  = ".warc.gz"
)

// encodeOutcome is o as its group's item holds it, with its WARC file's name in it. token is the
// writer's tag (writerTag), kept on an outcome without a page (stored.W).
func encodeOutcome(crawl string, o Outcome, token string) (string, error) {
	st, err := storedOf(crawl, o, token)
	return st.text(), err
}

// storedOf is o as its group's item holds it (see encodeOutcome).
func storedOf(crawl string, o Outcome, token string) (stored, error) {
	code, ok := stateCodes[o.State]
	if !ok {
		return stored{}, fmt.Errorf("%q is not a terminal state", o.State)
	}
	st := stored{S: code}
	if o.Page == nil {
		st.W = token
	}
	if o.Cause != nil {
		st.C, st.D = errclass.Of(o.Cause), safelog.Truncate(o.Cause.Error())
	}
	if p := o.Page; p != nil {
		st.K, st.O, st.L, st.H, st.T, st.F = p.WARCKey, p.Offset, p.Length, p.Status, p.ContentType, p.FetchedAt.UnixNano()
		if batch := usualBatch(crawl, p.WARCKey); batch != "" {
			st.K, st.B = "", batch
		}
		if p.FinalURL != o.URL {
			st.U = p.FinalURL
		}
		storeRecrawl(&st, p)
		if part, ok := partOf(p.WARCKey, p.Msg); ok {
			st.P = &part
		} else {
			st.M = p.Msg
		}
	}
	return st, nil
}

// usualBatch is the <day>/<batch> of key when it is the usual name of a WARC file of the crawl,
// pages/<crawl>/<day>/<batch>.warc.gz, or "".
func usualBatch(crawl, key string) string {
	if rest, ok := strings.CutPrefix(key, pagesPrefix+crawl+"/"); ok && strings.HasSuffix(rest, warcSuffix) {
		return strings.TrimSuffix(rest, warcSuffix)
	}
	return ""
}

// partOf returns n when msg is message.PartName(file, n).
func partOf(file, msg string) (int, bool) {
	rest, ok := strings.CutPrefix(msg, file+"#")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || message.PartName(file, n) != msg {
		return 0, false
	}
	return n, true
}

// apply sets u, a URL of crawl, from its outcome as its group's item holds it; file is the WARC
// file the outcome names by its id in the item, if it does (fileOf).
func (u *URL) apply(crawl, raw, file string) error {
	st, err := decodeOutcome(raw, file)
	if err != nil {
		return fmt.Errorf("outcome of %s: %w", u.Key, err)
	}
	if u.State = stateOf(st.S); u.State == "" {
		return fmt.Errorf("outcome of %s: unknown state %q", u.Key, st.S)
	}
	u.Class, u.Detail, u.outcome = st.C, st.D, raw
	if st.B != "" {
		st.K = pagesPrefix + crawl + "/" + st.B + warcSuffix
	}
	if st.K != "" {
		p := &Page{WARCKey: st.K, Offset: st.O, Length: st.L, FinalURL: st.U, Status: st.H, ContentType: st.T,
			FetchedAt: time.Unix(0, st.F).UTC(), Msg: st.M}
		if p.FinalURL == "" {
			p.FinalURL = u.URL
		}
		if st.P != nil {
			p.Msg = message.PartName(st.K, *st.P)
		}
		loadRecrawl(p, st)
		u.Page = p
	}
	return nil
}

// fromGroup sets what u's group item g holds of it: its outcome, or its claim. A URL queued in its
// own item is as its group says; one skipped or failed in its own item (Reject) has no group.
func (u *URL) fromGroup(crawl string, g table.Item) error {
	if u.State != Queued || g == nil {
		return nil
	}
	return u.fromHeld(crawl, heldIn(g, u.Key))
}

// held is what a group's item holds of one of its URLs; file is the WARC file its outcome names
// by its id in the item.
type held struct {
	outcome, owner, file string
	lease                int64 // Unix milliseconds
	redrive, gone        bool
}

// heldIn is what group item g holds of the URL key.
func heldIn(g table.Item, key string) held {
	out := g.String(outcomeAttr(key))
	return held{outcome: out, file: fileOf(g, out), owner: g.String(ownerAttr(key)), lease: g.Int(leaseAttr(key)),
		redrive: g.Bool(redriveAttr(key)), gone: g.Has(tombstoneAttr(key))}
}

// fileOf is the <day>/<batch> of the WARC file that the outcome raw names by its id in its group's
// item g, or "".
func fileOf(g table.Item, raw string) string {
	if ref := fileRef(raw); ref != "" {
		return g.String(fileAttr(ref))
	}
	return ""
}

// fromHeld sets what its group holds of u, a URL queued in its own item: a tombstone, an outcome,
// or a claim.
func (u *URL) fromHeld(crawl string, h held) error {
	if u.State != Queued {
		return nil
	}
	if h.gone {
		u.gone = true
		return nil
	}
	if h.outcome != "" {
		u.redrive = h.redrive
		return u.apply(crawl, h.outcome, h.file)
	}
	if h.owner != "" {
		u.Owner, u.Lease = h.owner, time.UnixMilli(h.lease)
	}
	return nil
}

// withGroup reads u's group and sets what it holds of u (fromGroup).
func (s *URLs) withGroup(ctx context.Context, crawl string, u URL) (URL, error) {
	if u.State != Queued {
		return u, nil
	}
	g, err := s.t.Get(ctx, groupKey(crawl, GroupOf(u)))
	if errors.Is(err, table.ErrNotFound) {
		return u, nil
	}
	if err != nil {
		return u, fmt.Errorf("read the group of %s: %w", u.Key, err)
	}
	return u, u.fromGroup(crawl, g)
}

// Record writes the outcomes of URLs of group, claimed by their Owners, in one write, and counts
// them. It leaves out, and returns, the keys of URLs whose claims another owner took over since
// (their leases ran out): those are theirs to record. Two outcomes given for one key are recorded
// as one (oneEach): an update may name an attribute once.
//
// The write's condition is that each URL's owner still holds it, and the write removes the
// owner: so when the SDK sends it again because its answer was lost, the replay's condition
// fails. The item as it was then shows the outcomes as written, each its own write token (see
// stored.W), and Record takes that for its own success.
//
// More than MaxGroupWrite outcomes (a run's) are recorded in writes of that many, each on its own.
func (s *URLs) Record(ctx context.Context, crawl, group string, outs []Outcome) (lost []string, err error) {
	outs = oneEach(outs)
	if len(outs) == 0 {
		return nil, nil
	}
	if len(outs) > MaxGroupWrite {
		for part := range slices.Chunk(outs, MaxGroupWrite) {
			gone, err := s.Record(ctx, crawl, group, part)
			lost = append(lost, gone...)
			if err != nil {
				return lost, err
			}
		}
		return lost, nil
	}
	expires, err := s.crawls.expiry(ctx, crawl)
	if err != nil {
		return nil, err
	}
	for _, o := range outs {
		if !o.State.Terminal() {
			return nil, fmt.Errorf("record %s: %q is not a terminal state", o.Key, o.State)
		}
	}
	inline := map[string]bool{} // files whose id another file holds in the item: named in full
	for {
		w, err := encodeRecord(crawl, outs, inline)
		if err != nil {
			return lost, err
		}
		u, cond := w.update(outs, expires)
		_, err = s.t.Update(ctx, groupKey(crawl, group), u, cond)
		cf, taken := table.IsConditionFailed(err)
		if err != nil && !taken {
			return lost, fmt.Errorf("record the outcomes of %s: %w", group, err)
		}
		if taken && !w.recordedIn(cf.Item, outs) {
			if w.clashes(cf.Item, inline) {
				continue // a file's id names another file in the item: name it in full
			}
			// Another owner took some of these URLs over: record the others.
			kept := outs[:0:0]
			for _, o := range outs {
				if cf.Item.String(ownerAttr(o.Key)) != ownerTag(o.Owner) {
					lost = append(lost, o.Key)
				} else {
					kept = append(kept, o)
				}
			}
			if len(kept) == len(outs) {
				return lost, fmt.Errorf("record the outcomes of %s: %w", group, err)
			}
			if outs = kept; len(outs) == 0 {
				return lost, nil
			}
			continue
		}
		return lost, s.counts.count(ctx, crawl, recordCounts(outs))
	}
}

// recordWrite is what Record writes: each outcome as its group's item holds it (vals, by key), and
// the WARC files they name by id (files, the item's attribute's name to the file's <day>/<batch>).
type recordWrite struct {
	vals, files map[string]string
}

// encodeRecord encodes outs for Record, each naming its usual WARC file by its id in the item but
// for the files in inline, and a file whose id another of outs' files took first.
func encodeRecord(crawl string, outs []Outcome, inline map[string]bool) (recordWrite, error) {
	w := recordWrite{vals: make(map[string]string, len(outs)), files: map[string]string{}}
	for _, o := range outs {
		st, err := storedOf(crawl, o, writerTag(o.Owner))
		if err != nil {
			return recordWrite{}, fmt.Errorf("record %s: %w", o.Key, err)
		}
		if st.B != "" && !inline[st.B] {
			id := fileID(st.B)
			if f, ok := w.files[fileAttr(id)]; !ok || f == st.B {
				st.Ref, w.files[fileAttr(id)] = id, st.B
			}
		}
		w.vals[o.Key] = st.text()
	}
	return w, nil
}

// clashes reports whether the group's item g holds another file under the id of one of w's, and
// adds those files to inline.
func (w recordWrite) clashes(g table.Item, inline map[string]bool) bool {
	clash := false
	for attr, file := range w.files {
		if g.Has(attr) && g.String(attr) != file {
			inline[file], clash = true, true
		}
	}
	return clash
}

// oneEach keeps one outcome of each key, deterministically: a fetched one (its page is stored, and
// its parse message goes out with it) before any other, and otherwise the first.
func oneEach(outs []Outcome) []Outcome {
	at := make(map[string]int, len(outs))
	kept := make([]Outcome, 0, len(outs))
	for _, o := range outs {
		i, dup := at[o.Key]
		switch {
		case !dup:
			at[o.Key] = len(kept)
			kept = append(kept, o)
		case o.State == Fetched && kept[i].State != Fetched:
			kept[i] = o
		}
	}
	return kept
}

// update is Record's write of outs and its condition: each URL's owner still holds it, and each
// file's id names that file in the item, or none yet.
func (w recordWrite) update(outs []Outcome, expires int64) (table.Update, table.Cond) {
	set := map[string]any{table.TTLAttr: expires}
	var remove []string
	conds := make([]table.Cond, 0, len(outs)+len(w.files))
	for _, o := range outs {
		set[outcomeAttr(o.Key)] = w.vals[o.Key]
		if o.Redrivable {
			set[redriveAttr(o.Key)] = true
		} else {
			remove = append(remove, redriveAttr(o.Key))
		}
		// The claim has done its work: the outcome keeps every other message off the URL.
		remove = append(remove, ownerAttr(o.Key), leaseAttr(o.Key))
		conds = append(conds, table.Eq(ownerAttr(o.Key), ownerTag(o.Owner)))
	}
	for attr, file := range w.files {
		set[attr] = file
		conds = append(conds, table.Or(table.NotExists(attr), table.Eq(attr, file)))
	}
	return table.Update{Set: set, Remove: remove}, table.And(conds...)
}

// recordedIn reports whether the group's item g holds the outcomes outs as Record writes them
// (w), with their claims gone: Record's own write, applied before, whose replay this is. An
// update is applied whole or not at all, so all of them are there or it is not Record's write.
func (w recordWrite) recordedIn(g table.Item, outs []Outcome) bool {
	for _, o := range outs {
		if g.String(outcomeAttr(o.Key)) != w.vals[o.Key] || g.Has(ownerAttr(o.Key)) {
			return false
		}
	}
	return true
}

// recordCounts are the counter increments of the outcomes recorded.
func recordCounts(outs []Outcome) map[string]int64 {
	counts := map[string]int64{}
	for _, o := range outs {
		counts[o.State.counter()]++
		if o.State == Fetched && o.Page != nil && o.Page.WARCKey != "" {
			counts[counterPages]++ // stored for parsing: the end waits for its parse (endcount.go)
		}
		if o.Prev == Failed {
			counts[string(Failed)]--
		}
		if o.Cause != nil {
			counts["class_"+string(errclass.Of(o.Cause))]++
		}
		addResponseCounts(counts, o)
	}
	return counts
}
