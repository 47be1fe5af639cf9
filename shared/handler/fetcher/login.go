package fetcher

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

// Logins: a host whose rule has a login (crawlspec.Login) is logged in before its first page, in
// the crawl's cookie jar of the host (sessions.go), and again when a page's answer says the
// session expired; that page is then asked once more, which counts as no failed try (and, should
// the new session be gone already, goes back to the queue as no failed try either). One
// invocation logs in at a time (crawlstate.Sessions.ClaimLogin): another that finds the session
// expired waits for the new one, and uses it. A host's logins are bounded by its rule's
// max_logins; past it, or when the login itself fails (a wrong password), its URLs end failed
// with class login_failed, which `crawl failures` and the summary show.

// LoginSender sends a login request (httpfetch.Client.Do).
type LoginSender interface {
	Do(ctx context.Context, rawURL string, s httpfetch.Send, follow func(target *url.URL) error) (*httpfetch.Response, error)
}

// LoginStore holds the hosts' logins in a crawl (crawlstate.Sessions).
type LoginStore interface {
	// LoginState reads host's logins in crawl.
	LoginState(ctx context.Context, crawl, host string) (crawlstate.LoginState, error)
	// ClaimLogin claims host's next login for owner while its session is still generation seen.
	ClaimLogin(ctx context.Context, crawl, host, owner string, seen int64, max int, lease time.Duration) (bool, crawlstate.LoginState, error)
	// EndLogin ends owner's claim, opened saying whether the login opened a session.
	EndLogin(ctx context.Context, crawl, host, owner string, opened bool) (crawlstate.LoginState, error)
}

// loginLease is how long a claim to log in holds: a login is one request. maxLoginWait is the
// longest a URL waits in the queue for another process's login before it looks again.
const (
	loginLease   = time.Minute
	maxLoginWait = 5 * time.Second
)

// getInSession is get for a host whose rule has a login: logged in first if the host has no
// session yet, and asked again once after a login when the answer says the session expired.
// done: the URL ended here (err says how); otherwise getErr is get's.
func (h *Handler) getInSession(ctx context.Context, a *fetching) (done bool, getErr, err error) {
	f, host := a.f, a.u.Host
	lg, lerr := a.crawl.crawl.LoginFor(host)
	js, _ := ctx.Value(jarsKey{}).(*jars)
	switch {
	case lerr != nil:
		return true, nil, h.finish(ctx, f, crawlstate.Failed, errclass.New(errclass.Login, lerr))
	case lg == nil || h.logins == nil || js == nil:
		return false, h.get(a), nil
	}
	ref := jarRef{crawl: f.msg.Crawl, host: host}
	seen, err := js.gen(ctx, h, ref)
	if err != nil {
		return true, nil, h.fail(ctx, f, err)
	}
	if seen == 0 {
		if done, err := h.logIn(ctx, a, lg, js, ref, 0); done {
			return true, nil, err
		}
	}
	seen, _ = js.gen(ctx, h, ref) // the session the request goes out in
	getErr = h.get(a)
	if !expired(lg, a, getErr) {
		return false, getErr, nil
	}
	if done, err := h.logIn(ctx, a, lg, js, ref, seen); done {
		return true, nil, err
	}
	if err := h.hopSlot(a.fctx, host, a.interval); err != nil {
		return false, err, nil // no slot soon for the page asked again: tried again later
	}
	a.resp = nil
	getErr = h.get(a)
	if expired(lg, a, getErr) {
		// The new session expired too (other pages in flight used it up): the URL goes back to
		// the queue, as no failed try, and its next try logs in again if it must. max_logins
		// bounds how often.
		return true, nil, h.requeueRetry(ctx, f,
			errclass.Errorf(errclass.Login, "the session with %s expired again right after a login", host), time.Second, f.msg.Retries)
	}
	return false, getErr, nil
}

func expired(lg *crawlspec.LoginRequest, a *fetching, getErr error) bool {
	return getErr == nil && a.resp != nil && lg.Expired(a.resp.Status, a.resp.URL, a.resp.Body)
}

// gen is ref's session generation as this invocation knows it, read once.
func (js *jars) gen(ctx context.Context, h *Handler, ref jarRef) (int64, error) {
	js.mu.Lock()
	g, ok := js.gens[ref]
	js.mu.Unlock()
	if ok {
		return g, nil
	}
	st, err := h.logins.LoginState(ctx, ref.crawl, ref.host)
	if err != nil {
		return 0, err
	}
	js.setGen(ref, st.Gen)
	return st.Gen, nil
}

// lockLogin takes ref's login lock in this process, and returns its release.
func (h *Handler) lockLogin(ref jarRef) func() {
	v, _ := h.loginLocks.LoadOrStore(ref, &sync.Mutex{})
	m := v.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}

func (js *jars) setGen(ref jarRef, g int64) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.gens[ref] = max(js.gens[ref], g)
}

// logIn opens a new session with the host, in place of generation seen, unless another
// invocation did so meanwhile (its session is then read). done: the URL ended, or waits in the
// queue for another's login.
func (h *Handler) logIn(ctx context.Context, a *fetching, lg *crawlspec.LoginRequest, js *jars, ref jarRef, seen int64) (done bool, err error) {
	f, host := a.f, ref.host
	// One login at a time in this process: the URLs of the host that waited for it use its
	// session (this batch's share its jar; another batch's find the generation moved on).
	unlock := h.lockLogin(ref)
	defer unlock()
	if g, _ := js.gen(ctx, h, ref); g > seen {
		return false, nil
	}
	ok, st, err := h.logins.ClaimLogin(ctx, ref.crawl, host, f.owner, seen, lg.Max, loginLease)
	if err != nil {
		return true, h.fail(ctx, f, err)
	}
	if !ok {
		switch {
		case st.Gen > seen: // another invocation opened a session: use it
			js.setGen(ref, st.Gen)
			js.reload(ctx, h, ref)
			return false, nil
		case st.Logins >= int64(lg.Max):
			return true, h.finish(ctx, f, crawlstate.Failed, errclass.Errorf(errclass.Login,
				"%d logins to %s made, the most its rule allows (max_logins %d): its session is not open", st.Logins, host, lg.Max))
		}
		// Another process logs in: a login is one request, so look again soon.
		wait := min(max(st.HeldUntil.Sub(h.now()), time.Second), maxLoginWait)
		return true, h.requeueRetry(ctx, f, errclass.Errorf(errclass.Connect, "another invocation logs in to %s", host), wait, f.msg.Retries)
	}
	cause := h.sendLogin(ctx, a, lg)
	js.saveNow(ctx, h, ref) // the session's cookies, before the claim ends
	st, err = h.logins.EndLogin(ctx, ref.crawl, host, f.owner, cause == nil)
	if err != nil {
		return true, h.fail(ctx, f, err)
	}
	js.setGen(ref, st.Gen)
	if cause != nil {
		h.log.Warn("login failed", "crawl", ref.crawl, "host", host, "logins", st.Logins, "err", cause.Error())
		var ce *errclass.Error
		if errors.As(cause, &ce) && ce.Class == errclass.Login {
			cause = ce.Err // named once
		}
		return true, h.finish(ctx, f, crawlstate.Failed, errclass.Errorf(errclass.Login, "login to %s failed: %v", host, cause))
	}
	return false, nil
}

// errLoginRefused is the cause of a login whose answer says it opened no session.
var errLoginRefused = errors.New("the answer to the login says it opened no session (a wrong password, or a changed form)")

// sendLogin sends the login request, as any request goes: robots.txt, the host's politeness slot,
// the SSRF guard and the crawl's scope on each redirect hop. nil: it opened a session (an answer
// under 400 that does not say the session is gone).
func (h *Handler) sendLogin(ctx context.Context, a *fetching, lg *crawlspec.LoginRequest) error {
	rules, err := h.robots.Check(ctx, lg.URL)
	switch {
	case err != nil:
		return err
	case !rules.Allowed:
		return errclass.Errorf(errclass.Robots, "robots.txt disallows the login url: %s", rules.Reason)
	}
	if err := h.hopSlot(a.fctx, lg.URL.Host, a.interval); err != nil {
		return err
	}
	s := httpfetch.Send{Method: lg.Method, Header: lg.Header.Clone()}
	target := *lg.URL
	if lg.Method == http.MethodGet {
		target.RawQuery = lg.Form.Encode()
	} else {
		s.Body = []byte(lg.Form.Encode())
		s.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := h.login.Do(a.fctx, target.String(), s, h.follow(a.fctx, a.f.msg, &target, a.crawl))
	switch {
	case err != nil:
		return err
	case resp.Status >= 400:
		return errclass.Errorf(errclass.Login, "status %d: %w", resp.Status, errLoginRefused)
	case lg.Refused(resp.Body):
		return errclass.New(errclass.Login, errLoginRefused)
	}
	return nil
}
