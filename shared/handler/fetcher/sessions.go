package fetcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"sync"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/session"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

// Sessions: the cookie jars of the hosts whose rule keeps a session (crawlspec.HostRule.Session).
// A batch reads a host's jar when its first request to the host goes out (a redirect hop's
// included), sends its cookies with each request net/http/cookiejar matches them to, keeps what
// the answers set, and saves the changes once, at the batch's end; a batch whose answers set no
// cookie writes nothing. Crawls and hosts without a session read and write nothing more.

// SessionStore keeps the crawl's cookie jars between invocations (crawlstate.Sessions).
type SessionStore interface {
	// LoadJar reads the cookies of host's jar in crawl.
	LoadJar(ctx context.Context, crawl, host string) ([]session.Cookie, error)
	// SaveJar applies changes to host's stored jar in crawl; token names this save, so that a
	// replay of its own write is recognised.
	SaveJar(ctx context.Context, crawl, host string, changes []session.Change, token string) (dropped int, err error)
}

// jars are the cookie jars one invocation has read, by crawl and host.
type jars struct {
	mu  sync.Mutex
	all map[jarRef]*jarLoad
	// gens are the hosts' session generations as this invocation knows them (login.go).
	gens map[jarRef]int64
}

type jarRef struct{ crawl, host string }

// jarLoad is one jar, read once however many requests wait for it.
type jarLoad struct {
	once sync.Once
	jar  *session.Jar
}

type jarsKey struct{}

// withJars returns ctx carrying a fresh set of jars for one invocation.
func withJars(ctx context.Context) (context.Context, *jars) {
	j := &jars{all: map[jarRef]*jarLoad{}, gens: map[jarRef]int64{}}
	return context.WithValue(ctx, jarsKey{}, j), j
}

// sessionContext has the requests made with ctx carry the crawl's cookies for the hosts whose rule
// keeps a session.
func (h *Handler) sessionContext(ctx context.Context, crawl string, c *crawlspec.Crawl) context.Context {
	js, _ := ctx.Value(jarsKey{}).(*jars)
	if h.sessions == nil || js == nil || !c.Sessions() {
		return ctx
	}
	return httpfetch.WithJar(ctx, &crawlJar{h: h, js: js, ctx: ctx, crawl: crawl, c: c})
}

// crawlJar is the http.CookieJar of one fetch of crawl: the jar of each host with a session, read
// when a request first goes to it, and none for the other hosts.
type crawlJar struct {
	h     *Handler
	js    *jars
	ctx   context.Context
	crawl string
	c     *crawlspec.Crawl
}

var _ http.CookieJar = (*crawlJar)(nil)

func (cj *crawlJar) Cookies(u *url.URL) []*http.Cookie {
	if j := cj.jar(u.Host); j != nil {
		return j.Cookies(u)
	}
	return nil
}

func (cj *crawlJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	if j := cj.jar(u.Host); j != nil {
		j.SetCookies(u, cookies)
	}
}

// jar is the jar of host, read on first use (nil: the host keeps no session, or its jar could not
// be read; the request then goes without cookies, and the batch saves none for it).
func (cj *crawlJar) jar(host string) *session.Jar {
	if !cj.c.Session(host) {
		return nil
	}
	ref := jarRef{crawl: cj.crawl, host: host}
	cj.js.mu.Lock()
	l, ok := cj.js.all[ref]
	if !ok {
		l = &jarLoad{}
		cj.js.all[ref] = l
	}
	cj.js.mu.Unlock()
	l.once.Do(func() {
		stored, err := cj.h.sessions.LoadJar(cj.ctx, cj.crawl, host)
		if err == nil {
			l.jar, err = session.NewJar(host, stored, cj.h.now)
		}
		if err != nil {
			cj.h.log.Warn("read a host's cookie jar: its requests go without cookies", "crawl", cj.crawl, "host", host, "err", err.Error())
		}
	})
	return l.jar
}

// save writes the changes of the invocation's jars. A jar that cannot be saved is logged: the
// host's next batch starts from the jar as last saved (the site sets its cookies again).
func (js *jars) save(ctx context.Context, h *Handler) {
	js.mu.Lock()
	all := make(map[jarRef]*session.Jar, len(js.all))
	for ref, l := range js.all {
		if l.jar != nil {
			all[ref] = l.jar
		}
	}
	js.mu.Unlock()
	for ref, j := range all {
		saveJar(ctx, h, ref, j)
	}
}

// saveJar writes the changes of one jar, if it has any.
func saveJar(ctx context.Context, h *Handler, ref jarRef, j *session.Jar) {
	changes := j.Changes()
	if len(changes) == 0 {
		return
	}
	dropped, err := h.sessions.SaveJar(ctx, ref.crawl, ref.host, changes, saveToken())
	if err != nil {
		h.log.Warn("save a host's cookie jar", "crawl", ref.crawl, "host", ref.host, "err", err.Error())
		return
	}
	j.Saved(len(changes))
	if dropped > 0 {
		h.log.Warn("a host's cookie jar is full: cookies left out", "crawl", ref.crawl, "host", ref.host, "dropped", dropped,
			"maxCookies", session.MaxCookies, "maxCookieBytes", session.MaxCookieBytes)
	}
}

// reload saves the changes of ref's jar and forgets it, so that its next use reads it again: the
// session another invocation opened.
func (js *jars) reload(ctx context.Context, h *Handler, ref jarRef) {
	js.mu.Lock()
	l := js.all[ref]
	delete(js.all, ref)
	js.mu.Unlock()
	if l != nil && l.jar != nil {
		saveJar(ctx, h, ref, l.jar)
	}
}

// saveNow saves ref's jar at once (a login's cookies, before its claim ends).
func (js *jars) saveNow(ctx context.Context, h *Handler, ref jarRef) {
	js.mu.Lock()
	l := js.all[ref]
	js.mu.Unlock()
	if l != nil && l.jar != nil {
		saveJar(ctx, h, ref, l.jar)
	}
}

// saveToken names one save of a jar.
func saveToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// redactSession returns the answer's header with the values of the cookies a host with a session
// set redacted, as its request record's Cookie header is (warcfile.Redacted): the WARC file
// keeps that the answer set cookies, never their values.
func redactSession(h http.Header, c *crawlspec.Crawl, host string) http.Header {
	if !c.Session(host) || len(h.Values("Set-Cookie")) == 0 {
		return h
	}
	out := h.Clone()
	for i := range out["Set-Cookie"] {
		out["Set-Cookie"][i] = warcfile.RedactedValue
	}
	return out
}
