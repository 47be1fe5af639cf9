package crawlstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/errclass"
	"github.com/crawlstack/crawlstack/shared/message"
	"github.com/crawlstack/crawlstack/shared/safelog"
	"github.com/crawlstack/crawlstack/shared/table"
)

// A fetch message's outcomes are written in one item, not one write on each of its URLs' items:
// "r#<crawl>#<group>", where the group is the fetch message's id (GroupOf the claim's owner). A
// table write is billed by the kilobyte, rounded up, and a URL's outcome takes about a hundred
// bytes, so one write for the ten URLs of a message costs what one URL's own write cost before.
//
// A URL item claimed by owner keeps its claim (state queued, owner, lease) after its outcome is
// written: its state is its outcome in its owner's group, where there is one (Get and ScanURLs
// read it so). A claim whose lease ran out is taken over only when the owner's group holds no
// outcome for the URL; the taker first marks the URL taken in that group, so that the old owner,
// if it is still at work, cannot record it afterwards (Record's condition), and nothing is
// recorded or counted twice.

// groupKey is the table key of a group's outcomes.
func groupKey(crawl, group string) string { return "r#" + crawl + "#" + group }

// GroupOf is the group of a claim's owner: the fetch message's id, without the "#i" that names
// one URL of a message of several.
func GroupOf(owner string) string {
	if i := strings.IndexByte(owner, '#'); i >= 0 {
		return owner[:i]
	}
	return owner
}

// The attributes of a URL in its group's item: its outcome ("o") and, when another owner took the
// URL over, a mark ("t"). Named by the first 16 hex digits of the URL's key: a group holds a few
// URLs, and the name's bytes are billed with the item.
func outcomeAttr(key string) string { return "o" + shortKey(key) }
func takenAttr(key string) string   { return "t" + shortKey(key) }

func shortKey(key string) string {
	if len(key) > 16 {
		return key[:16]
	}
	return key
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
}

// stored is an Outcome as its group's item holds it: short names, the page's parts that can be
// derived left out.
type stored struct {
	S State          `json:"s"`
	C errclass.Class `json:"c,omitempty"`
	D string         `json:"d,omitempty"`
	R bool           `json:"r,omitempty"`
	K string         `json:"k,omitempty"` // the WARC file
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
}

func encodeOutcome(o Outcome) (string, error) {
	st := stored{S: o.State, R: o.Redrivable}
	if o.Cause != nil {
		st.C, st.D = errclass.Of(o.Cause), safelog.Truncate(o.Cause.Error())
	}
	if p := o.Page; p != nil {
		st.K, st.O, st.L, st.H, st.T, st.F = p.WARCKey, p.Offset, p.Length, p.Status, p.ContentType, p.FetchedAt.UnixNano()
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
	b, err := json.Marshal(st)
	return string(b), err
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

// apply sets u's state from its outcome as its group's item holds it.
func (u *URL) apply(raw string) error {
	var st stored
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return fmt.Errorf("outcome of %s: %w", u.Key, err)
	}
	u.State, u.Class, u.Detail, u.redrive, u.outcome = st.S, st.C, st.D, st.R, raw
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

// Record writes the outcomes of URLs claimed by members of group (the claims' owners: GroupOf
// each) in one write, and counts them. It leaves out, and returns, the keys of URLs that another
// owner took over since (their claims' leases ran out): those are theirs to record.
func (s *Store) Record(ctx context.Context, crawl, group string, outs []Outcome) (lost []string, err error) {
	if len(outs) == 0 {
		return nil, nil
	}
	expires, err := s.expiry(ctx, crawl)
	if err != nil {
		return nil, err
	}
	for {
		set := map[string]any{attrUpdated: s.Now().UnixMilli(), table.TTLAttr: expires}
		conds := make([]table.Cond, 0, len(outs))
		for _, o := range outs {
			if !o.State.Terminal() {
				return lost, fmt.Errorf("record %s: %q is not a terminal state", o.Key, o.State)
			}
			v, err := encodeOutcome(o)
			if err != nil {
				return lost, fmt.Errorf("record %s: %w", o.Key, err)
			}
			set[outcomeAttr(o.Key)] = v
			conds = append(conds, table.NotExists(takenAttr(o.Key)))
		}
		_, err := s.t.Update(ctx, groupKey(crawl, group), table.Update{Set: set}, table.And(conds...))
		cf, taken := table.IsConditionFailed(err)
		if err != nil && !taken {
			return lost, fmt.Errorf("record the outcomes of %s: %w", group, err)
		}
		if taken {
			// Another owner took some of these URLs over: record the others.
			kept := outs[:0:0]
			for _, o := range outs {
				if cf.Item.Has(takenAttr(o.Key)) {
					lost = append(lost, o.Key)
				} else {
					kept = append(kept, o)
				}
			}
			if len(kept) == len(outs) {
				return lost, fmt.Errorf("record the outcomes of %s: %w", group, err)
			}
			outs = kept
			if len(outs) == 0 {
				return lost, nil
			}
			continue
		}
		counts := map[string]int64{}
		for _, o := range outs {
			counts[o.State.counter()]++
			if o.Prev == Failed {
				counts[string(Failed)]--
			}
			if o.Cause != nil {
				counts["class_"+string(errclass.Of(o.Cause))]++
			}
		}
		return lost, s.count(ctx, crawl, counts)
	}
}

// withOutcome reads the outcome of u, a claimed URL, from its owner's group, if there is one.
func (s *Store) withOutcome(ctx context.Context, crawl string, u URL) (URL, error) {
	if u.State != Queued || u.Owner == "" {
		return u, nil
	}
	it, err := s.t.Get(ctx, groupKey(crawl, GroupOf(u.Owner)))
	if errors.Is(err, table.ErrNotFound) {
		return u, nil
	}
	if err != nil {
		return u, fmt.Errorf("read the outcome of %s: %w", u.Key, err)
	}
	if raw := it.String(outcomeAttr(u.Key)); raw != "" && !it.Has(takenAttr(u.Key)) {
		return u, u.apply(raw)
	}
	return u, nil
}

// takeOver claims u, held by another owner whose lease ran out (or whose outcome for it is a
// redrivable failure), for owner. It returns ErrClaimed when u is done, or held by a live owner.
func (s *Store) takeOver(ctx context.Context, crawl, key, owner string, lease time.Duration, held URL) (URL, error) {
	now := s.Now()
	u, err := s.withOutcome(ctx, crawl, held)
	if err != nil {
		return URL{}, err
	}
	prev := Queued
	switch {
	case u.State == Failed && u.redrive:
		prev = Failed // its message went to the DLQ and came back
	case u.State != Queued:
		return URL{}, ErrClaimed // done
	case u.Lease.After(now):
		return URL{}, ErrClaimed // a live owner holds it
	default:
		// The owner's lease ran out before it recorded the URL: mark the URL taken in its group,
		// unless it recorded it meanwhile.
		_, err := s.t.Update(ctx, groupKey(crawl, GroupOf(u.Owner)), table.Update{Set: map[string]any{takenAttr(key): true}},
			table.NotExists(outcomeAttr(key)))
		if _, done := table.IsConditionFailed(err); done {
			return URL{}, ErrClaimed
		}
		if err != nil {
			return URL{}, fmt.Errorf("take %s over: %w", key, err)
		}
	}
	it, err := s.t.Update(ctx, URLKey(crawl, key), table.Update{Set: map[string]any{
		attrOwner: owner, attrLease: now.Add(lease).UnixMilli(), attrUpdated: now.UnixMilli(),
	}}, table.And(table.Eq(attrOwner, held.Owner), table.Eq(attrLease, held.Lease.UnixMilli())))
	if _, moved := table.IsConditionFailed(err); moved {
		return URL{}, ErrClaimed // its owner claimed it again, or another worker took it
	}
	if err != nil {
		return URL{}, fmt.Errorf("take %s over: %w", key, err)
	}
	claimed := urlFrom(key, it)
	claimed.State = prev
	return claimed, nil
}
