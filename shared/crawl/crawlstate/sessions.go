package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/session"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A crawl's cookie jars (package session): one item a host whose rule keeps a session,
// c#<crawl>#<n> s#<host>, read once by each batch that fetches from the host and written only when
// the batch's answers set or expire cookies. A write is conditional on the version it read, and a
// write that lost to another invocation's reads again and applies its changes on top: two
// invocations saving at once lose nothing. The write carries a token of its own, so that a write
// applied and its answer lost (the SDK sends it again, whose condition then fails) is recognised as
// done, and changes nothing more.

// SessionKind starts the sort keys of the crawl's cookie jars (s#<host>).
const SessionKind = sessionKind

const sessionKind = "s#"

// On a jar's item: its cookies (session.Encode), its version, and the token of its last write.
const (
	attrJar    = "jar"
	attrJarVer = "ver"
	attrJarBy  = "by"
)

// maxJarWrites bounds the writes of one save that keeps losing to others' (each reads again).
const maxJarWrites = 8

// JarKey is the table key of the crawl's cookie jar of host.
func JarKey(crawl, host string) table.Key { return inCrawl(crawl, sessionKind, host) }

// Sessions reads and writes the crawl's cookie jars.
type Sessions struct {
	t         table.Table
	now       func() time.Time
	retention time.Duration
}

// NewSessions returns the cookie jars on t (now: the clock, time.Now when nil).
func NewSessions(t table.Table, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{t: t, now: now, retention: DefaultRetention}
}

// Sessions are the store's cookie jars.
func (s *Store) Sessions() *Sessions { return NewSessions(s.base.t, s.base.now) }

// LoadJar reads the cookies of host's jar in crawl (none when it has none yet).
func (s *Sessions) LoadJar(ctx context.Context, crawl, host string) ([]session.Cookie, error) {
	cookies, _, _, err := s.read(ctx, crawl, host)
	return cookies, err
}

func (s *Sessions) read(ctx context.Context, crawl, host string) ([]session.Cookie, int64, table.Item, error) {
	it, err := s.t.Get(ctx, JarKey(crawl, host))
	switch {
	case errors.Is(err, table.ErrNotFound):
		return nil, 0, nil, nil
	case err != nil:
		return nil, 0, nil, fmt.Errorf("read the cookie jar of %s in crawl %s: %w", host, crawl, err)
	}
	cookies, err := session.Decode(it.String(attrJar))
	if err != nil {
		return nil, 0, nil, fmt.Errorf("the cookie jar of %s in crawl %s: %w", host, crawl, err)
	}
	return cookies, it.Int(attrJarVer), it, nil
}

// SaveJar applies changes to host's stored jar in crawl, with token naming this save (unique to
// it: a replay of the save's own write is recognised by it). It writes nothing when the changes
// leave the jar as it is, and returns how many cookies the jar's bounds left out.
func (s *Sessions) SaveJar(ctx context.Context, crawl, host string, changes []session.Change, token string) (dropped int, err error) {
	key := JarKey(crawl, host)
	cookies, ver, _, err := s.read(ctx, crawl, host)
	if err != nil {
		return 0, err
	}
	for range maxJarWrites {
		var next []session.Cookie
		next, dropped = session.Apply(cookies, changes, s.now())
		if session.Same(cookies, next) {
			return dropped, nil
		}
		enc, err := session.Encode(next)
		if err != nil {
			return 0, err
		}
		cond := table.Eq(attrJarVer, ver)
		if ver == 0 {
			cond = table.ItemNotExists()
		}
		item := table.Item{attrJar: enc, attrJarVer: ver + 1, attrJarBy: token,
			table.TTLAttr: s.now().Add(s.retention).Unix()}
		err = s.t.Put(ctx, key, item, cond)
		cf, lost := table.IsConditionFailed(err)
		switch {
		case err == nil:
			return dropped, nil
		case !lost:
			return 0, fmt.Errorf("write the cookie jar of %s in crawl %s: %w", host, crawl, err)
		case cf.Item != nil && cf.Item.String(attrJarBy) == token && cf.Item.Int(attrJarVer) == ver+1:
			return dropped, nil // this save's own write, applied once already: its answer was lost
		}
		// Another invocation saved first: apply the changes to what it saved.
		if cookies, ver, _, err = s.read(ctx, crawl, host); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("write the cookie jar of %s in crawl %s: %d writes lost to others' in a row", host, crawl, maxJarWrites)
}

// DeleteJars deletes the crawl's cookie jars and login items of the hosts that match (an
// erasure), and returns how many jars there were.
func DeleteJars(ctx context.Context, t table.Table, crawl string, match func(host string) bool, dryRun bool) (int, error) {
	var ids []string
	jars := 0
	err := EachInCrawl(ctx, t, crawl, sessionKind, func(sort string, _ table.Item) error {
		if rest := sort[len(sessionKind):]; match(jarHost(rest)) {
			ids = append(ids, rest)
			if jarHost(rest) == rest {
				jars++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("read the cookie jars of crawl %s: %w", crawl, err)
	}
	for _, id := range ids {
		if dryRun {
			continue
		}
		if err := t.Delete(ctx, JarKey(crawl, id), table.Cond{}); err != nil {
			return 0, fmt.Errorf("delete the session of %s in crawl %s: %w", jarHost(id), crawl, err)
		}
	}
	return jars, nil
}
