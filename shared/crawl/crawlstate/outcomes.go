package crawlstate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
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
