// Package blobtest is the conformance suite for blob.Store. Every adapter (S3 against an emulator
// or LocalStack, files under a temp dir) runs the same subtests, so semantics that differ show up
// as test failures.
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/blob"
)

// Run runs the suite. newStore is called once per subtest; it may return a fresh or a shared
// store, since every subtest writes under its own unique key prefix.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s blob.Store, prefix string)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"GetMissing", testGetMissing},
		{"PutIfAbsent", testPutIfAbsent},
		{"GetRange", testGetRange},
		{"List", testList},
		{"AwkwardKeys", testAwkwardKeys},
		{"EmptyBody", testEmptyBody},
		{"LargeBody", testLargeBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newStore(t), Prefix(t))
		})
	}
}

// Prefix returns a key prefix unique to the test: a hash of its name and a random suffix.
func Prefix(t *testing.T) string {
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "blobtest/" + hex.EncodeToString(h.Sum(nil)) + "-" + hex.EncodeToString(b) + "/"
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustPut(t *testing.T, s blob.Store, key string, body []byte) {
	t.Helper()
	if err := s.Put(ctx(t), key, body, "application/octet-stream"); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func mustGet(t *testing.T, s blob.Store, key string) []byte {
	t.Helper()
	got, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return got
}

func testPutGet(t *testing.T, s blob.Store, p string) {
	key := p + "a.txt"
	mustPut(t, s, key, []byte("hello"))
	if got := mustGet(t, s, key); string(got) != "hello" {
		t.Errorf("Get = %q, want %q", got, "hello")
	}
}

func testOverwrite(t *testing.T, s blob.Store, p string) {
	key := p + "a.txt"
	mustPut(t, s, key, []byte("first version, longer"))
	mustPut(t, s, key, []byte("second"))
	if got := mustGet(t, s, key); string(got) != "second" {
		t.Errorf("Get = %q, want %q", got, "second")
	}
}

func testGetMissing(t *testing.T, s blob.Store, p string) {
	if _, err := s.Get(ctx(t), p+"missing"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get(missing) error = %v, want blob.ErrNotFound", err)
	}
	if _, err := s.GetRange(ctx(t), p+"missing", 0, 1); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("GetRange(missing) error = %v, want blob.ErrNotFound", err)
	}
}

func testPutIfAbsent(t *testing.T, s blob.Store, p string) {
	key := p + "once"
	if err := s.PutIfAbsent(ctx(t), key, []byte("one"), "text/plain"); err != nil {
		t.Fatalf("first PutIfAbsent: %v", err)
	}
	if err := s.PutIfAbsent(ctx(t), key, []byte("two"), "text/plain"); !errors.Is(err, blob.ErrExists) {
		t.Errorf("second PutIfAbsent error = %v, want blob.ErrExists", err)
	}
	if got := mustGet(t, s, key); string(got) != "one" {
		t.Errorf("Get = %q, want the first body %q", got, "one")
	}
}

func testGetRange(t *testing.T, s blob.Store, p string) {
	key := p + "digits"
	mustPut(t, s, key, []byte("0123456789"))
	tests := []struct {
		name           string
		offset, length int64
		want           string
	}{
		{"start", 0, 3, "012"},
		{"middle", 3, 4, "3456"},
		{"to end", 7, 3, "789"},
		{"past end is clipped", 5, 100, "56789"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.GetRange(ctx(t), key, tt.offset, tt.length)
			if err != nil {
				t.Fatalf("GetRange(%d, %d): %v", tt.offset, tt.length, err)
			}
			if string(got) != tt.want {
				t.Errorf("GetRange(%d, %d) = %q, want %q", tt.offset, tt.length, got, tt.want)
			}
		})
	}
}

func testList(t *testing.T, s blob.Store, p string) {
	keys := []string{p + "pages/b", p + "pages/a", p + "pages/c/d", p + "pagesx", p + "seeds/s.txt"}
	for _, k := range keys {
		mustPut(t, s, k, []byte(k))
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{p + "pages/", []string{p + "pages/a", p + "pages/b", p + "pages/c/d"}},
		{p + "pages", []string{p + "pages/a", p + "pages/b", p + "pages/c/d", p + "pagesx"}},
		{p + "seeds/s", []string{p + "seeds/s.txt"}},
		{p + "nothing/", nil},
		{p, []string{p + "pages/a", p + "pages/b", p + "pages/c/d", p + "pagesx", p + "seeds/s.txt"}},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.prefix, p), func(t *testing.T) {
			got, err := s.List(ctx(t), tt.prefix)
			if err != nil {
				t.Fatalf("List(%q): %v", tt.prefix, err)
			}
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("List(%q) = %q, want %q", tt.prefix, got, tt.want)
			}
		})
	}
}

func testAwkwardKeys(t *testing.T, s blob.Store, p string) {
	keys := []string{
		p + "with space.txt",
		p + "ünïcødé/日本語.html",
		p + "deep/a/b/c/d.txt",
		p + "chars!$&'()*+,;=@~%41.txt",
		p + "query?x=1#frag",
		p + ".hidden",
	}
	for _, k := range keys {
		mustPut(t, s, k, []byte("body of "+k))
	}
	for _, k := range keys {
		if got := mustGet(t, s, k); string(got) != "body of "+k {
			t.Errorf("Get(%q) = %q, want %q", k, got, "body of "+k)
		}
	}
	got, err := s.List(ctx(t), p)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func testEmptyBody(t *testing.T, s blob.Store, p string) {
	key := p + "empty"
	mustPut(t, s, key, nil)
	got, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("Get(empty): %v", err)
	}
	if len(got) != 0 {
		t.Errorf("Get(empty) = %d bytes, want 0", len(got))
	}
}

func testLargeBody(t *testing.T, s blob.Store, p string) {
	key := p + "large.bin"
	body := make([]byte, 5<<20)
	_, _ = rand.Read(body)
	mustPut(t, s, key, body)
	if got := mustGet(t, s, key); !bytes.Equal(got, body) {
		t.Errorf("Get(large) returned %d bytes that differ from the %d put", len(got), len(body))
	}
	got, err := s.GetRange(ctx(t), key, 4<<20, 1024)
	if err != nil {
		t.Fatalf("GetRange(large): %v", err)
	}
	if !bytes.Equal(got, body[4<<20:4<<20+1024]) {
		t.Errorf("GetRange(large) differs from the body")
	}
}
