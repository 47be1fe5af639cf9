package crawlstate

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// The state of a resumable tally, as a step saves it (tallystep.go):
//
//	"tally1"                        the format
//	uvarint n, n bytes of JSON      tallyHeader: its counts, and its cursors
//	set                             the parse marks read
//	set                             the Links messages' names named
//	set                             the Links messages' names marked admitted
//	uvarint m, then m times:        the pages read before their parse message's mark, by message:
//	  uvarint delta, set              the message's hash (less the one before), its pages' hashes
//
// A set is a count and the sorted hashes as uvarint deltas (the first from 0): 8-byte hashes of
// some hundred thousand names differ by some 2^45, 7 bytes each. A page's set may repeat a hash,
// as the tally's list of them may (each counts). Pages that a mark read already accounts for are
// left out.

const tallyFormat = "tally1"

// tallyHeader is what a saved tally holds besides its hashes.
type tallyHeader struct {
	Seen, Fetched, Skipped, Failed, StoppedURLs int64
	Classes                                     map[errclass.Class]int64 `json:",omitempty"`
	// Outcomes and Queued: the tallier's outcomes and queued URL items.
	Outcomes, Queued int64
	Cursors          []cursor
}

// encodeTally is the state of the tally t, at cur.
func encodeTally(t *tallier, cur *cursors) ([]byte, error) {
	h, err := json.Marshal(tallyHeader{Seen: t.c.Seen, Fetched: t.c.Fetched, Skipped: t.c.Skipped, Failed: t.c.Failed,
		StoppedURLs: t.c.StoppedURLs, Classes: t.c.Classes, Outcomes: t.outcomes, Queued: t.queued, Cursors: cur[:]})
	if err != nil {
		return nil, err
	}
	t.named, t.admitted = sortedSet(t.named), sortedSet(t.admitted)
	marks := make([]uint64, 0, len(t.marks))
	for m := range t.marks {
		marks = append(marks, m)
	}
	slices.Sort(marks)
	b := append([]byte(tallyFormat), binary.AppendUvarint(nil, uint64(len(h)))...)
	b = append(b, h...)
	b = appendSet(b, marks)
	b = appendSet(b, t.named)
	b = appendSet(b, t.admitted)
	msgs := make([]uint64, 0, len(t.pages))
	for m, pages := range t.pages {
		if !t.marks[m] && slices.ContainsFunc(pages, func(p uint64) bool { return !t.marks[p] }) {
			msgs = append(msgs, m)
		}
	}
	slices.Sort(msgs)
	b = binary.AppendUvarint(b, uint64(len(msgs)))
	last := uint64(0)
	for _, m := range msgs {
		b = binary.AppendUvarint(b, m-last)
		last = m
		pages := slices.DeleteFunc(slices.Clone(t.pages[m]), func(p uint64) bool { return t.marks[p] })
		slices.Sort(pages)
		b = appendSet(b, pages)
	}
	return b, nil
}

// appendSet appends the sorted hashes hs to b as a count and uvarint deltas.
func appendSet(b []byte, hs []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(hs)))
	last := uint64(0)
	for _, h := range hs {
		b = binary.AppendUvarint(b, h-last)
		last = h
	}
	return b
}

// decodeTally reads a saved state into t, a tally begun (resumable), and cur.
func decodeTally(b []byte, t *tallier, cur *cursors) error {
	if len(b) < len(tallyFormat) || string(b[:len(tallyFormat)]) != tallyFormat {
		return errors.New("not a saved tally of this format")
	}
	r := &stateReader{b: b[len(tallyFormat):]}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = fmt.Errorf("a header of %d bytes in %d", n, len(r.b))
	}
	if r.err != nil {
		return r.err
	}
	var h tallyHeader
	if err := json.Unmarshal(r.b[:n], &h); err != nil {
		return fmt.Errorf("its header: %w", err)
	}
	if len(h.Cursors) != len(cur) {
		return fmt.Errorf("%d cursors, want %d", len(h.Cursors), len(cur))
	}
	r.b = r.b[n:]
	t.c.Seen, t.c.Fetched, t.c.Skipped, t.c.Failed, t.c.StoppedURLs = h.Seen, h.Fetched, h.Skipped, h.Failed, h.StoppedURLs
	for cl, n := range h.Classes {
		t.c.Classes[cl] = n
	}
	t.outcomes, t.queued = h.Outcomes, h.Queued
	copy(cur[:], h.Cursors)
	for _, m := range r.set() {
		t.marks[m] = true
	}
	t.named, t.admitted = r.set(), r.set()
	msgs := r.uvarint()
	last := uint64(0)
	for i := uint64(0); i < msgs && r.err == nil; i++ {
		last += r.uvarint()
		t.pages[last] = r.set()
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after its end", len(r.b))
	}
	return r.err
}

// stateReader reads a saved state's varints; its first error stops it.
type stateReader struct {
	b   []byte
	err error
}

func (r *stateReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("cut short, or a varint out of range")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// set reads a count and as many deltas (each at least a byte: a count beyond the bytes left is
// an error, not an allocation).
func (r *stateReader) set() []uint64 {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = fmt.Errorf("a set of %d hashes in %d bytes", n, len(r.b))
	}
	if r.err != nil {
		return nil
	}
	hs := make([]uint64, n)
	last := uint64(0)
	for i := range hs {
		last += r.uvarint()
		hs[i] = last
	}
	return hs
}
