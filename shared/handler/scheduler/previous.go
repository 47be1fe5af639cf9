package scheduler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// A recrawl names the crawl before it. Each seed file has a pointer object that names the last
// crawl started from it, and the crawl before that one: crawls/latest/<sha256(seed key)>.json.
// A crawl started from a seed file that has a pointer naming another crawl recrawls that one (its
// settings carry it, crawlspec.Settings.Previous). One GET and one PUT per crawl started, never
// per page; the pointer lives beside the crawls' reports, which only schedule writes.

// LatestPrefix is where the seed files' pointers lie.
const LatestPrefix = layout.Latest

// LatestKey is the key of the pointer of the seed file at key. Crawl ids never are "latest" (they
// end in a digest), so the pointers never mix with a crawl's reports.
func LatestKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return LatestPrefix + hex.EncodeToString(sum[:16]) + ".json"
}

// latest is a seed file's pointer.
type latest struct {
	SeedFile string `json:"seedFile"`
	// Crawl is the last crawl started from the file, Previous the one it recrawls ("": none).
	Crawl    string `json:"crawl"`
	Previous string `json:"previous,omitempty"`
}

// previousOf returns the crawl that crawl, started from the seed file at key, recrawls: the last
// crawl started from the file before it, or "" for its first. A repeated start of the same crawl
// (a redelivered event) gets the same answer.
func (h *Handler) previousOf(ctx context.Context, key, crawl string) (string, error) {
	l, _, err := h.latestOf(ctx, key)
	if err != nil {
		return "", err
	}
	if l.Crawl == crawl {
		return l.Previous, nil
	}
	return l.Crawl, nil
}

// latestOf reads the pointer of the seed file at key; false when it has none (or an unreadable
// one, logged: a damaged pointer costs one full crawl, not the crawl itself).
func (h *Handler) latestOf(ctx context.Context, key string) (latest, bool, error) {
	l, ok, err := readLatest(ctx, h.blobs, key)
	var bad *badPointer
	if errors.As(err, &bad) {
		h.log.Warn("the last crawl of a seed file is unreadable: crawling it in full", "seedFile", key, "err", bad.err.Error())
		return latest{}, false, nil
	}
	return l, ok, err
}

// LastCrawl is the crawl last started from the seed file at key: "" for none, or for a pointer
// that cannot be read (schedule then starts a crawl of its own).
func LastCrawl(ctx context.Context, blobs PointerReader, key string) (string, error) {
	l, _, err := readLatest(ctx, blobs, key)
	var bad *badPointer
	if errors.As(err, &bad) {
		return "", nil
	}
	return l.Crawl, err
}

// PointerReader reads the seed files' pointers.
type PointerReader interface {
	Get(ctx context.Context, key string) ([]byte, error)
	List(ctx context.Context, prefix string) ([]string, error)
}

// badPointer is a pointer that is not JSON.
type badPointer struct{ err error }

func (b *badPointer) Error() string { return "unreadable pointer: " + b.err.Error() }

func readLatest(ctx context.Context, blobs PointerReader, key string) (latest, bool, error) {
	// Listed first: S3 answers a GET of a missing key 403, not 404, to a role that may not list
	// where it is; the stack lets schedule list LatestPrefix.
	latestKey := LatestKey(key)
	keys, err := blobs.List(ctx, latestKey)
	if err != nil {
		return latest{}, false, fmt.Errorf("look for the last crawl of %s: %w", key, err)
	}
	if !slices.Contains(keys, latestKey) {
		return latest{}, false, nil
	}
	body, err := blobs.Get(ctx, latestKey)
	if errors.Is(err, blob.ErrNotFound) {
		return latest{}, false, nil
	}
	if err != nil {
		return latest{}, false, fmt.Errorf("read the last crawl of %s: %w", key, err)
	}
	var l latest
	if err := json.Unmarshal(body, &l); err != nil {
		return latest{}, false, &badPointer{err: err}
	}
	return l, true, nil
}

// setLatest records crawl as the last one started from the seed file at key.
func (h *Handler) setLatest(ctx context.Context, key, crawl, previous string) error {
	b, err := json.Marshal(latest{SeedFile: key, Crawl: crawl, Previous: previous})
	if err != nil {
		return err
	}
	if err := h.blobs.Put(ctx, LatestKey(key), b, "application/json"); err != nil {
		return fmt.Errorf("record the last crawl of %s: %w", key, err)
	}
	return nil
}
