// Package fileblobtest gives tests a file store (the embedded backend's blob store) that already
// holds the objects they read.
package fileblobtest

import (
	"context"
	"testing"

	"github.com/crawlstack/crawlstack/shared/local/fileblob"
)

// Filled returns a store in a temporary folder holding objects, by key.
func Filled(t testing.TB, objects map[string]string) *fileblob.Store {
	t.Helper()
	s, err := fileblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range objects {
		if err := s.Put(context.Background(), k, []byte(v), ""); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
