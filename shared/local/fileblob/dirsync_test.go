package fileblob

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestOneDirectorySyncCoversTheObjectsMovedBeforeIt puts two objects into one directory and makes
// both durable: the second needs no sync of its own. An object in another directory does.
func TestOneDirectorySyncCoversTheObjectsMovedBeforeIt(t *testing.T) {
	s, root := newTestStore(t)
	ctx := context.Background()
	synced := watchDirSyncs(t)
	var durables []func() error
	for _, key := range []string{"d/file.warc.gz", "d/file.warc.gz.cdxj", "e/other"} {
		durable, err := s.PutDeferred(ctx, key, []byte(key), "")
		if err != nil {
			t.Fatal(err)
		}
		durables = append(durables, durable)
	}
	*synced = nil // the new directories' parents
	for _, durable := range durables {
		if err := durable(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{filepath.Join(root, "d"), filepath.Join(root, "e")}
	if len(*synced) != 2 || (*synced)[0] != want[0] || (*synced)[1] != want[1] {
		t.Errorf("synced %q, want %q", *synced, want)
	}
	if err := s.Put(ctx, "d/later", []byte("x"), ""); err != nil {
		t.Fatal(err)
	}
	if len(*synced) != 3 || (*synced)[2] != want[0] {
		t.Errorf("a Put after the sync synced %q, want its directory again", (*synced)[2:])
	}
}

// TestAnObjectMovedDuringASyncWaitsForTheNext holds a directory's sync while another object is
// moved into the directory: that object's durable must not return on the sync that began before
// its move, but on one of its own, and a failed sync fails the objects it was to cover.
func TestAnObjectMovedDuringASyncWaitsForTheNext(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()
	if err := s.Put(ctx, "d/first", []byte("1"), ""); err != nil { // the directory exists
		t.Fatal(err)
	}
	var mu sync.Mutex
	var syncs int
	entered, release := make(chan struct{}), make(chan error)
	real := syncDir
	syncDir = func(dir string) error {
		mu.Lock()
		syncs++
		mu.Unlock()
		entered <- struct{}{}
		return <-release
	}
	t.Cleanup(func() { syncDir = real })

	a, err := s.PutDeferred(ctx, "d/a", []byte("a"), "")
	if err != nil {
		t.Fatal(err)
	}
	aDone := make(chan error, 1)
	go func() { aDone <- a() }()
	<-entered // a's sync is under way

	b, err := s.PutDeferred(ctx, "d/b", []byte("b"), "")
	if err != nil {
		t.Fatal(err)
	}
	bDone := make(chan error, 1)
	go func() { bDone <- b() }()

	release <- nil
	if err := <-aDone; err != nil {
		t.Fatalf("a: %v", err)
	}
	select {
	case err := <-bDone:
		t.Fatalf("b was made durable (%v) by a sync that began before its move", err)
	case <-entered: // b's own sync
	case <-time.After(time.Minute):
		t.Fatal("b neither returned nor synced its directory in a minute")
	}
	failed := errors.New("injected: sync failed")
	release <- failed
	if err := <-bDone; !errors.Is(err, failed) {
		t.Errorf("b: err = %v, want the failed sync's", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if syncs != 2 {
		t.Errorf("%d syncs, want 2", syncs)
	}
}

// newTestStore is a store in a new temporary directory, and that directory.
func newTestStore(t *testing.T) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}
