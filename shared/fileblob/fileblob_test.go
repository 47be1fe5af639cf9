package fileblob_test

import (
	"context"
	"errors"
	"testing"

	"github.com/crawlstack/crawlstack/shared/blob"
	"github.com/crawlstack/crawlstack/shared/blob/blobtest"
	"github.com/crawlstack/crawlstack/shared/fileblob"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		s, err := fileblob.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestBadKeys(t *testing.T) {
	s, err := fileblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  string
	}{
		{"empty", ""},
		{"absolute", "/etc/passwd"},
		{"dotdot escape", "../outside"},
		{"dotdot inside", "a/../../b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Put(context.Background(), tt.key, []byte("x"), "")
			if !errors.Is(err, fileblob.ErrBadKey) {
				t.Errorf("Put(%q) error = %v, want ErrBadKey", tt.key, err)
			}
			if _, err := s.Get(context.Background(), tt.key); !errors.Is(err, fileblob.ErrBadKey) {
				t.Errorf("Get(%q) error = %v, want ErrBadKey", tt.key, err)
			}
		})
	}
}

func TestOddSegments(t *testing.T) {
	s, err := fileblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keys := []string{"a//b", "a/./c", "trailing/", "%", "%%41", "."}
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte(k), ""); err != nil {
			t.Fatalf("Put(%q): %v", k, err)
		}
	}
	for _, k := range keys {
		got, err := s.Get(ctx, k)
		if err != nil || string(got) != k {
			t.Errorf("Get(%q) = %q, %v; want %q", k, got, err, k)
		}
	}
	list, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(keys) {
		t.Errorf("List = %q, want %d keys", list, len(keys))
	}
}

func TestPrefixKeyIsNotAnObject(t *testing.T) {
	s, err := fileblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "dir/file", []byte("x"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "dir"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get(dir) error = %v, want blob.ErrNotFound", err)
	}
	if err := s.Put(ctx, "dir", []byte("x"), ""); err == nil {
		t.Errorf("Put(dir) over a prefix succeeded, want an error")
	}
}
