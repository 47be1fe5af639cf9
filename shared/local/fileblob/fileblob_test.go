package fileblob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/blob/blobtest"
)

func TestConformance(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	blobtest.Run(t, func(*testing.T) blob.Store { return s })
}

func TestBadKeys(t *testing.T) {
	root := t.TempDir()
	s, err := New(filepath.Join(root, "blobs"))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, key := range []string{"", "/etc/passwd", "../outside", "a/../../outside", "a/./b", "..", "bad\xffutf8", "nul\x00"} {
		t.Run(key, func(t *testing.T) {
			err := s.Put(context.Background(), key, []byte("x"), "")
			if !errors.Is(err, errBadKey) {
				t.Errorf("Put(%q) err = %v, want an invalid key error", key, err)
			}
		})
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("files outside the store root: %v", entries)
	}
}

func TestKeyPathRoundTrip(t *testing.T) {
	tests := []struct {
		key, path string
	}{
		{"seeds/a.txt", "seeds/a.txt"},
		{"a", "a"},
		{"a/", "a/%%"},
		{"a//b", "a/%%/b"},
		{"with space/x y", "with%20space/x%20y"},
		{"100%/x", "100%25/x"},
		{"é/ü", "é/ü"},
		{"%tmp-x", "%25tmp-x"},
		{"records/crawl=c1/dt=2026-12-01/x.jsonl", "records/crawl=c1/dt=2026-12-01/x.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			p, err := keyPath(tt.key)
			if err != nil {
				t.Fatalf("keyPath: %v", err)
			}
			if filepath.ToSlash(p) != tt.path {
				t.Errorf("keyPath(%q) = %q, want %q", tt.key, p, tt.path)
			}
			got, ok := keyFromPath(p)
			if !ok || got != tt.key {
				t.Errorf("keyFromPath(%q) = %q, %v; want %q", p, got, ok, tt.key)
			}
		})
	}
}

func TestKeyAndPrefixCollideClearly(t *testing.T) {
	tests := []struct{ first, second string }{
		{"a", "a/b"},   // an object, then a key below it
		{"x/y", "x"},   // a prefix, then an object of the same name
		{"p/", "p//q"}, // empty segments collide the same way
	}
	for _, tt := range tests {
		t.Run(tt.first+" then "+tt.second, func(t *testing.T) {
			s, err := New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := s.Put(ctx, tt.first, []byte("1"), ""); err != nil {
				t.Fatalf("Put %q: %v", tt.first, err)
			}
			err = s.Put(ctx, tt.second, []byte("2"), "")
			if err == nil || !strings.Contains(err.Error(), "both an object and a prefix") {
				t.Fatalf("Put %q after %q = %v, want a clear collision error", tt.second, tt.first, err)
			}
			if got, err := s.Get(ctx, tt.first); err != nil || string(got) != "1" {
				t.Errorf("the first object was harmed: %q, %v", got, err)
			}
		})
	}
}

func TestNoTemporaryFilesLeft(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "d/k", []byte("1"), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "d/k", []byte("2"), ""); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "d/k", []byte("3"), ""); !errors.Is(err, blob.ErrExists) {
		t.Fatalf("PutIfAbsent: err = %v, want blob.ErrExists", err)
	}
	if err := s.PutIfAbsent(ctx, "d/new", []byte("4"), ""); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(root, "d"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != "k" || names[1] != "new" {
		t.Errorf("files = %q, want just the two objects", names)
	}
}

// TestWritesSyncTheirDirectories checks the order that makes a write durable: the directory of the
// object is synced after its rename or link, and the parent of each directory a write creates
// after the mkdir.
func TestWritesSyncTheirDirectories(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	synced := watchDirSyncs(t)
	ctx := context.Background()
	rel := func(dirs []string) []string {
		var out []string
		for _, d := range dirs {
			r, err := filepath.Rel(root, d)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, filepath.ToSlash(r))
		}
		return out
	}
	for _, c := range []struct {
		name string
		put  func() error
		want []string
	}{
		{"Put into new directories", func() error { return s.Put(ctx, "a/b/one", []byte("1"), "") }, []string{".", "a", "a/b"}},
		{"Put into a directory that exists", func() error { return s.Put(ctx, "a/b/two", []byte("2"), "") }, []string{"a/b"}},
		{"PutIfAbsent", func() error { return s.PutIfAbsent(ctx, "a/three", []byte("3"), "") }, []string{"a"}},
		{"PutIfAbsent of a taken name", func() error {
			if err := s.PutIfAbsent(ctx, "a/three", []byte("3"), ""); !errors.Is(err, blob.ErrExists) {
				return err
			}
			return nil
		}, nil},
	} {
		*synced = nil
		if err := c.put(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := rel(*synced); strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s synced %q, want %q", c.name, got, c.want)
		}
	}
}

// PutDeferred's object is whole and readable at once; only durable syncs it and its directory.
func TestPutDeferredIsReadableAtOnceAndDurableOnRequest(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "d/first", []byte("1"), ""); err != nil {
		t.Fatal(err)
	}
	synced := watchDirSyncs(t)
	durable, err := s.PutDeferred(ctx, "d/k", []byte("body"), "")
	if err != nil {
		t.Fatal(err)
	}
	if *synced != nil {
		t.Errorf("PutDeferred synced %q before durable was called", *synced)
	}
	if got, err := s.Get(ctx, "d/k"); err != nil || string(got) != "body" {
		t.Errorf("Get before durable = %q, %v; want the whole object", got, err)
	}
	if err := durable(); err != nil {
		t.Fatalf("durable: %v", err)
	}
	if want := filepath.Join(root, "d"); len(*synced) != 1 || (*synced)[0] != want {
		t.Errorf("durable synced %q, want the object's directory %q", *synced, want)
	}
	entries, err := os.ReadDir(filepath.Join(root, "d"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Name() != "first" || entries[1].Name() != "k" {
		t.Errorf("files = %v, want just the two objects", entries)
	}
	if _, err := s.PutDeferred(ctx, "../outside", []byte("x"), ""); !errors.Is(err, errBadKey) {
		t.Errorf("PutDeferred of a bad key: err = %v, want an invalid key error", err)
	}
}

// watchDirSyncs records the directories synced until the test ends.
func watchDirSyncs(t *testing.T) *[]string {
	var synced []string
	real := syncDir
	syncDir = func(dir string) error {
		synced = append(synced, dir)
		return real(dir)
	}
	t.Cleanup(func() { syncDir = real })
	return &synced
}
