// Package specstore keeps the settings of each crawl that a spec started, where every handler
// finds them: crawls/<crawl>/spec.json in the blob store, written by schedule before the crawl's
// first message goes out and never changed after (a crawl's id names one version of its spec).
// Each handler reads a crawl's settings once per process and keeps them, so a warm Lambda pays
// one GET per crawl, not one per message.
package specstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// Prefix is where the crawls' reports and settings live (layout.Crawls).
const Prefix = layout.Crawls

// cacheSize bounds the crawls whose settings one process keeps.
const cacheSize = 256

// Key is the key of crawl's settings.
func Key(crawl string) string { return layout.Spec(crawl) }

// Putter stores the settings.
type Putter interface {
	Put(ctx context.Context, key string, body []byte, contentType string) error
}

// Save stores crawl's settings: s, or none (a crawl of a URL list) when s is nil, so that every
// crawl schedule starts has its object and a handler's read never misses.
func Save(ctx context.Context, p Putter, crawl string, s *crawlspec.Settings) error {
	if s == nil {
		s = &crawlspec.Settings{Version: crawlspec.Version}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode the settings of crawl %s: %w", crawl, err)
	}
	if err := p.Put(ctx, Key(crawl), b, "application/json"); err != nil {
		return fmt.Errorf("store the settings of crawl %s: %w", crawl, err)
	}
	return nil
}

// Getter reads the settings.
type Getter interface {
	Get(ctx context.Context, key string) ([]byte, error)
}

// Store answers what a crawl's settings are: the stack's (Base) with its spec's over them. It is
// safe for concurrent use.
type Store struct {
	blobs   Getter
	base    crawlspec.Crawl
	secrets secretref.Resolver // nil: secret headers are left unread
	cache   *lru.Cache[string, *crawlspec.Crawl]
	flight  singleflight.Group
}

// New returns a Store that reads from blobs, over base.
func New(blobs Getter, base crawlspec.Crawl) *Store {
	c, _ := lru.New[string, *crawlspec.Crawl](cacheSize) // only a size below 1 fails
	return &Store{blobs: blobs, base: base, cache: c}
}

// WithSecrets has the store read the values of the crawls' secret headers with r and put them in
// each crawl's Header: the fetch handler's store, the only one that sends them. Call it before
// the first For.
func (s *Store) WithSecrets(r secretref.Resolver) *Store {
	s.secrets = r
	return s
}

// Base is the stack's settings, those of a crawl without a spec.
func (s *Store) Base() *crawlspec.Crawl {
	b := s.base
	return &b
}

// For returns crawl's settings. A crawl with no stored settings (one started before specs, or by
// a test's own message) has the stack's. The result is shared: callers must not change it.
func (s *Store) For(ctx context.Context, crawl string) (*crawlspec.Crawl, error) {
	if c, ok := s.cache.Get(crawl); ok {
		return c, nil
	}
	v, err, _ := s.flight.Do(crawl, func() (any, error) {
		// A read that finished between the look above and this flight has filled the cache.
		if c, ok := s.cache.Get(crawl); ok {
			return c, nil
		}
		body, err := s.blobs.Get(ctx, Key(crawl))
		var set *crawlspec.Settings
		switch {
		case errors.Is(err, blob.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("read the settings of crawl %s: %w", crawl, err)
		default:
			set = &crawlspec.Settings{}
			if err := json.Unmarshal(body, set); err != nil {
				return nil, fmt.Errorf("decode the settings of crawl %s: %w", crawl, err)
			}
		}
		c, err := set.Over(s.base)
		if err != nil {
			return nil, fmt.Errorf("settings of crawl %s: %w", crawl, err)
		}
		if err := s.readSecrets(ctx, c); err != nil {
			return nil, fmt.Errorf("settings of crawl %s: %w", crawl, err)
		}
		s.cache.Add(crawl, c)
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*crawlspec.Crawl), nil
}

// readSecrets puts the values of c's secret headers into its Header, when the store reads them,
// and names them in Secret with the headers that carry credentials. Its errors name the header
// and its reference, never a value.
func (s *Store) readSecrets(ctx context.Context, c *crawlspec.Crawl) error {
	c.Secret = nil
	for name := range c.Header {
		if crawlspec.IsSecretHeader(name) {
			c.Secret = append(c.Secret, name)
		}
	}
	if err := c.ReadLogins(ctx, s.secrets); err != nil {
		return err
	}
	if len(c.SecretRefs) == 0 || s.secrets == nil {
		return nil
	}
	h := c.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for name, raw := range c.SecretRefs {
		ref, err := secretref.Parse(raw, true)
		if err != nil {
			return fmt.Errorf("header %s: %w", name, err)
		}
		v, err := s.secrets.Resolve(ctx, ref)
		if err != nil {
			return fmt.Errorf("header %s: %w", name, err)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %s: the value of %s is not one line", name, ref)
		}
		h.Set(name, v)
		c.Secret = append(c.Secret, name)
	}
	c.Header = h
	slices.Sort(c.Secret)
	return nil
}
