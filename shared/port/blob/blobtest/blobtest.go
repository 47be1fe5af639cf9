// Package blobtest is the conformance suite for the blob port. Every adapter (S3 against gofakes3
// or LocalStack, and the embedded file store) runs the same Run from its own tests, so that
// semantics which differ between backends show up as test failures, in the style of upspin's
// storagetest.
//
// Each subtest writes only keys under its own random prefix, so a store may be shared by subtests
// and by concurrent runs.
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// Run runs the conformance suite. newStore is called once per subtest; it may return the same
// store every time.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s blob.Store, prefix string)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"GetMissing", testGetMissing},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentRace", testPutIfAbsentRace},
		{"GetRange", testGetRange},
		{"List", testList},
		{"AwkwardKeys", testAwkwardKeys},
		{"EmptyBody", testEmptyBody},
		{"LargeBody", testLargeBody},
		{"Delete", testDelete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newStore(t), uniquePrefix(t))
		})
	}
}

func uniquePrefix(t *testing.T) string {
	t.Helper()
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatalf("random prefix: %v", err)
	}
	return "bt-" + hex.EncodeToString(r[:]) + "/"
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, s blob.Store, key string, body []byte) {
	t.Helper()
	if err := s.Put(ctxFor(t), key, body, "application/octet-stream"); err != nil {
		t.Fatalf("Put %q: %v", key, err)
	}
}

func wantBody(t *testing.T, s blob.Store, key string, want []byte) {
	t.Helper()
	got, err := s.Get(ctxFor(t), key)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Get %q = %d bytes %.40q, want %d bytes %.40q", key, len(got), got, len(want), want)
	}
}

func testPutGet(t *testing.T, s blob.Store, prefix string) {
	key := prefix + "seeds/a.txt"
	put(t, s, key, []byte("https://example.com/\n"))
	wantBody(t, s, key, []byte("https://example.com/\n"))
}

func testOverwrite(t *testing.T, s blob.Store, prefix string) {
	key := prefix + "k"
	put(t, s, key, []byte("first, and longer"))
	put(t, s, key, []byte("second"))
	wantBody(t, s, key, []byte("second"))
}

func testGetMissing(t *testing.T, s blob.Store, prefix string) {
	if _, err := s.Get(ctxFor(t), prefix+"missing"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get missing: err = %v, want blob.ErrNotFound", err)
	}
	if _, err := s.GetRange(ctxFor(t), prefix+"missing", 0, 1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("GetRange missing: err = %v, want blob.ErrNotFound", err)
	}
}

func testPutIfAbsent(t *testing.T, s blob.Store, prefix string) {
	key := prefix + "once"
	if err := s.PutIfAbsent(ctxFor(t), key, []byte("first"), "text/plain"); err != nil {
		t.Fatalf("first PutIfAbsent: %v", err)
	}
	if err := s.PutIfAbsent(ctxFor(t), key, []byte("second"), "text/plain"); !errors.Is(err, blob.ErrExists) {
		t.Fatalf("second PutIfAbsent: err = %v, want blob.ErrExists", err)
	}
	wantBody(t, s, key, []byte("first"))
}

func testPutIfAbsentRace(t *testing.T, s blob.Store, prefix string) {
	const workers, rounds = 8, 20
	for round := range rounds {
		key := fmt.Sprintf("%srace-%d", prefix, round)
		var wg sync.WaitGroup
		results := make(chan error, workers)
		winners := make(chan byte, workers)
		start := make(chan struct{}) // released at once, so that the writers really race
		for w := range workers {
			body := byte('a' + w)
			wg.Go(func() {
				<-start
				err := s.PutIfAbsent(context.Background(), key, []byte{body}, "text/plain")
				if err == nil {
					winners <- body
				}
				results <- err
			})
		}
		close(start)
		wg.Wait()
		close(results)
		close(winners)
		for err := range results {
			if err != nil && !errors.Is(err, blob.ErrExists) {
				t.Errorf("PutIfAbsent: %v", err)
			}
		}
		var won []byte
		for b := range winners {
			won = append(won, b)
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d PutIfAbsent calls won (%q), want exactly 1", round, len(won), won)
		}
		wantBody(t, s, key, won)
	}
}

func testGetRange(t *testing.T, s blob.Store, prefix string) {
	key := prefix + "range"
	body := []byte("0123456789abcdef")
	put(t, s, key, body)
	tests := []struct {
		name           string
		offset, length int64
		want           string
	}{
		{"Start", 0, 4, "0123"},
		{"Middle", 5, 3, "567"},
		{"ToEnd", 10, 6, "abcdef"},
		{"Whole", 0, 16, string(body)},
		{"OneByte", 15, 1, "f"},
		{"PastEnd", 12, 100, "cdef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.GetRange(ctxFor(t), key, tt.offset, tt.length)
			if err != nil {
				t.Fatalf("GetRange(%d, %d): %v", tt.offset, tt.length, err)
			}
			if string(got) != tt.want {
				t.Errorf("GetRange(%d, %d) = %q, want %q", tt.offset, tt.length, got, tt.want)
			}
		})
	}
	for _, offset := range []int64{16, 100} {
		if got, err := s.GetRange(ctxFor(t), key, offset, 4); !errors.Is(err, blob.ErrInvalidRange) {
			t.Errorf("GetRange(%d, 4) of a 16-byte object = %q, %v; want blob.ErrInvalidRange", offset, got, err)
		}
	}
}

func testList(t *testing.T, s blob.Store, prefix string) {
	keys := []string{"pages/b.warc", "pages/a.warc", "pages/sub/c.warc", "pagesX/d", "results/e.json", "pages/a.warc.1"}
	for _, k := range keys {
		put(t, s, prefix+k, []byte(k))
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"pages/", []string{"pages/a.warc", "pages/a.warc.1", "pages/b.warc", "pages/sub/c.warc"}},
		{"pages", []string{"pages/a.warc", "pages/a.warc.1", "pages/b.warc", "pages/sub/c.warc", "pagesX/d"}},
		{"pages/a", []string{"pages/a.warc", "pages/a.warc.1"}},
		{"results/", []string{"results/e.json"}},
		{"none/", nil},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			got, err := s.List(ctxFor(t), prefix+tt.prefix)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			var want []string
			for _, k := range tt.want {
				want = append(want, prefix+k)
			}
			if len(got) == 0 && len(want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("List(%q) = %q, want %q", tt.prefix, got, want)
			}
		})
	}
}

func testAwkwardKeys(t *testing.T, s blob.Store, prefix string) {
	keys := []string{
		"with space/file name.txt",
		"unicode/é日本/ü.txt",
		"deep/a/b/c/d/e.txt",
		"punct/a+b=c&d;e,f@g$h'i(j)!~*.txt",
		"percent/%2F%20.txt",
		"dots/a..b/...c",
		"UPPER/Case.TXT",
		"upper/case.txt",
		"trailing-dot./x",
	}
	for _, k := range keys {
		put(t, s, prefix+k, []byte("body of "+k))
	}
	for _, k := range keys {
		wantBody(t, s, prefix+k, []byte("body of "+k))
	}
	got, err := s.List(ctxFor(t), prefix)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[prefix+k] = true
	}
	for _, k := range got {
		if !want[k] {
			t.Errorf("List returned unexpected key %q", k)
		}
		delete(want, k)
	}
	for k := range want {
		t.Errorf("List is missing %q", k)
	}
	for i := 1; i < len(got); i++ {
		if got[i-1] >= got[i] {
			t.Errorf("List not sorted: %q before %q", got[i-1], got[i])
		}
	}
}

func testEmptyBody(t *testing.T, s blob.Store, prefix string) {
	key := prefix + "empty"
	put(t, s, key, nil)
	got, err := s.Get(ctxFor(t), key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if len(got) != 0 {
		t.Errorf("Get = %d bytes, want 0", len(got))
	}
	keys, err := s.List(ctxFor(t), key)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !reflect.DeepEqual(keys, []string{key}) {
		t.Errorf("List = %q, want the empty object listed", keys)
	}
}

func testLargeBody(t *testing.T, s blob.Store, prefix string) {
	key := prefix + "large"
	body := make([]byte, 5<<20)
	if _, err := rand.Read(body); err != nil {
		t.Fatalf("random body: %v", err)
	}
	put(t, s, key, body)
	wantBody(t, s, key, body)
	got, err := s.GetRange(ctxFor(t), key, 3<<20, 1<<20)
	if err != nil {
		t.Fatalf("GetRange: %v", err)
	}
	if !bytes.Equal(got, body[3<<20:4<<20]) {
		t.Errorf("GetRange of the large body differs")
	}
}

// testDelete: a deleted object is gone for Get and List, its neighbours stay, and deleting a
// missing object is no error. A store that cannot delete fails: every adapter can.
func testDelete(t *testing.T, s blob.Store, prefix string) {
	d, ok := s.(blob.Deleter)
	if !ok {
		t.Fatalf("%T does not implement blob.Deleter", s)
	}
	put(t, s, prefix+"d/a", []byte("a"))
	put(t, s, prefix+"d/b", []byte("b"))
	ctx := ctxFor(t)
	if err := d.Delete(ctx, prefix+"d/a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, prefix+"d/a"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	wantBody(t, s, prefix+"d/b", []byte("b"))
	keys, err := s.List(ctx, prefix+"d/")
	if err != nil || !reflect.DeepEqual(keys, []string{prefix + "d/b"}) {
		t.Errorf("List after Delete = %q, %v; want only %s", keys, err, prefix+"d/b")
	}
	if err := d.Delete(ctx, prefix+"d/missing"); err != nil {
		t.Errorf("Delete of a missing object: %v, want nil", err)
	}
}
