package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A host's logins in a crawl (crawlspec.Login): one item beside its cookie jar,
// c#<crawl>#<n> s#<host>#login, that counts the logins made and numbers the session they opened
// (its generation), and holds the claim of the one invocation logging in now, a lease that
// expires on its own. Two invocations that find the session expired at once claim it in turn: the
// first logs in, the second sees the generation move on and uses the new session. Each write
// recognises its own replay.

// On the login item: the session's generation (logins that succeeded), the logins made, the
// claim's owner and lease end (Unix ms), and the owner of the last login ended.
const (
	attrLoginGen    = "gen"
	attrLoginCount  = "logins"
	attrLoginBy     = "by"
	attrLoginUntil  = "until"
	attrLoginLastBy = "lastBy"
)

// loginKey is the key of host's login item in crawl.
func loginKey(crawl, host string) table.Key { return inCrawl(crawl, sessionKind, host+loginSuffix) }

const loginSuffix = "#login"

// LoginState is a host's logins in a crawl.
type LoginState struct {
	// Gen numbers the session: the logins that succeeded (0: none yet).
	Gen int64
	// Logins counts the logins made, those that failed too.
	Logins int64
	// HeldBy is the owner of a live claim to log in ("": none), until HeldUntil.
	HeldBy    string
	HeldUntil time.Time
}

func loginStateOf(it table.Item, now time.Time) LoginState {
	st := LoginState{Gen: it.Int(attrLoginGen), Logins: it.Int(attrLoginCount)}
	if until := time.UnixMilli(it.Int(attrLoginUntil)); it.Has(attrLoginBy) && until.After(now) {
		st.HeldBy, st.HeldUntil = it.String(attrLoginBy), until
	}
	return st
}

// LoginState reads host's logins in crawl.
func (s *Sessions) LoginState(ctx context.Context, crawl, host string) (LoginState, error) {
	it, err := s.t.Get(ctx, loginKey(crawl, host))
	switch {
	case errors.Is(err, table.ErrNotFound):
		return LoginState{}, nil
	case err != nil:
		return LoginState{}, fmt.Errorf("read the logins of %s in crawl %s: %w", host, crawl, err)
	}
	return loginStateOf(it, s.now()), nil
}

// ClaimLogin claims host's next login for owner, for lease: it holds while the session is still
// the generation seen, fewer than max logins were made, and no other owner holds a live claim.
// When it does not, ok is false and st says why (a newer session, the logins used up, another's
// claim).
func (s *Sessions) ClaimLogin(ctx context.Context, crawl, host, owner string, seen int64, max int, lease time.Duration) (ok bool, st LoginState, err error) {
	now := s.now()
	gen := table.Eq(attrLoginGen, seen)
	if seen == 0 {
		gen = table.Or(table.NotExists(attrLoginGen), table.Eq(attrLoginGen, int64(0)))
	}
	cond := table.And(gen,
		table.Or(table.NotExists(attrLoginCount), table.Lt(attrLoginCount, int64(max))),
		table.Or(table.NotExists(attrLoginBy), table.Lt(attrLoginUntil, now.UnixMilli())))
	it, err := s.t.Update(ctx, loginKey(crawl, host), table.Update{Set: map[string]any{
		attrLoginBy: owner, attrLoginUntil: now.Add(lease).UnixMilli(), table.TTLAttr: now.Add(s.retention).Unix()}}, cond)
	if err == nil {
		return true, loginStateOf(it, now), nil
	}
	cf, lost := table.IsConditionFailed(err)
	if !lost {
		return false, LoginState{}, fmt.Errorf("claim the login of %s in crawl %s: %w", host, crawl, err)
	}
	if cf.Item != nil && cf.Item.String(attrLoginBy) == owner && cf.Item.Int(attrLoginGen) == seen {
		return true, loginStateOf(cf.Item, now), nil // this claim's own write, replayed
	}
	if cf.Item == nil {
		return false, LoginState{}, nil
	}
	return false, loginStateOf(cf.Item, now), nil
}

// EndLogin ends owner's claim: one more login made and, when it opened a session, one more
// generation. It returns the state after it.
func (s *Sessions) EndLogin(ctx context.Context, crawl, host, owner string, opened bool) (LoginState, error) {
	u := table.Update{Add: map[string]int64{attrLoginCount: 1}, Set: map[string]any{attrLoginLastBy: owner},
		Remove: []string{attrLoginBy, attrLoginUntil}}
	if opened {
		u.Add[attrLoginGen] = 1
	}
	it, err := s.t.Update(ctx, loginKey(crawl, host), u, table.Eq(attrLoginBy, owner))
	if err == nil {
		return loginStateOf(it, s.now()), nil
	}
	cf, lost := table.IsConditionFailed(err)
	if lost && cf.Item != nil && cf.Item.String(attrLoginLastBy) == owner {
		return loginStateOf(cf.Item, s.now()), nil // ended already: this write, replayed
	}
	return LoginState{}, fmt.Errorf("end the login of %s in crawl %s: %w", host, crawl, err)
}

// jarHost is the host of a cookie jar's or login item's sort key (after SessionKind).
func jarHost(rest string) string {
	host, _ := strings.CutSuffix(rest, loginSuffix)
	return host
}
