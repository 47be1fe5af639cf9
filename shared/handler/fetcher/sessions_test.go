package fetcher_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

// consentValue is the consent cookie's value: a secret that no WARC file may hold.
const consentValue = "c0nsent-4f1c9a"

// consentSite sets a consent cookie on its front page and answers its other pages only to a
// request that carries it (403 otherwise). It notes the Cookie header of each page's request.
type consentSite struct {
	srv     *httptest.Server
	mu      sync.Mutex
	cookies map[string]string
}

func newConsentSite(t *testing.T) *consentSite {
	s := &consentSite{cookies: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.cookies[r.URL.Path] = r.Header.Get("Cookie")
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/" {
			http.SetCookie(w, &http.Cookie{Name: "consent", Value: consentValue, Path: "/", HttpOnly: true})
			fmt.Fprint(w, `<html><body><a href="/a">a</a></body></html>`)
			return
		}
		if c, err := r.Cookie("consent"); err != nil || c.Value != consentValue {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, "<html><body>accept the cookies first</body></html>")
			return
		}
		fmt.Fprint(w, "<html><body>behind the consent wall</body></html>")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *consentSite) cookieOf(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cookies[path]
}

// sessionRig is fetch handlers on one crawl state, each new one a fresh invocation (a cold
// Lambda): only the state is shared.
type sessionRig struct {
	t     *testing.T
	be    embedtest.Backend
	jars  *embedtest.CountingTable // the state's table, counting the calls on cookie jars
	state *crawlstate.Store
	crawl *crawlspec.Crawl
}

func newSessionRig(t *testing.T, spec string) *sessionRig {
	t.Helper()
	return newSessionRigOf(t, spec, crawlspec.Bounds{})
}

// newSessionRigLocal is newSessionRig for a spec read by crawl run, whose secrets may be env:
// and file: references.
func newSessionRigLocal(t *testing.T, spec string) *sessionRig {
	t.Helper()
	return newSessionRigOf(t, spec, crawlspec.Bounds{LocalSecrets: true})
}

func newSessionRigOf(t *testing.T, spec string, b crawlspec.Bounds) *sessionRig {
	t.Helper()
	s, err := crawlspec.Parse([]byte(spec), b)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Settings.Over(crawlspec.Crawl{Rules: scope.DefaultRules(), UserAgent: userAgent})
	if err != nil {
		t.Fatal(err)
	}
	be := embedtest.Open(t, fetchQ, parseQ)
	jars := &embedtest.CountingTable{Table: be.Table, Only: func(k table.Key) bool { return crawlstate.KindOf(k) == "cookie jar" }}
	return &sessionRig{t: t, be: be, jars: jars, state: crawlstate.New(jars), crawl: c}
}

// invoke runs one fresh handler on a batch of the URLs, each admitted first.
func (r *sessionRig) invoke(urls ...string) {
	r.t.Helper()
	guard := netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	client, err := httpfetch.New(httpfetch.Options{UserAgent: userAgent, Guard: guard, TotalTimeout: 10 * time.Second})
	if err != nil {
		r.t.Fatal(err)
	}
	defer client.Close()
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue = fetchQ, parseQ
	cfg.HostRPS, cfg.HostConcurrency, cfg.MaxQuickRetry = 0, 0, 0
	h := fetcher.New(cfg, withState(r.state, fetcher.Deps{HTTP: client, Robots: robots.New(client, userAgent, time.Hour),
		Scope: scope.DefaultRules(), Guard: guard, Pages: r.be.Blobs, Send: r.be.Queue, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Crawls: specCrawls{r.crawl}, Sessions: r.state.Sessions(), Logins: r.state.Sessions(), Login: client}))
	var recs []events.SQSMessage
	for i, u := range urls {
		if _, err := r.state.Admit(context.Background(), crawl, keyOf(r.t, u), u, u, 0, "links"); err != nil {
			r.t.Fatal(err)
		}
		body, err := message.Encode(message.Fetch{Header: message.Header{Crawl: crawl}, Target: message.Target{URL: u, Root: u}})
		if err != nil {
			r.t.Fatal(err)
		}
		recs = append(recs, events.SQSMessage{MessageId: fmt.Sprintf("msg-%d-%d", time.Now().UnixNano(), i), Body: body, EventSource: "aws:sqs",
			Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1795982400000"}})
	}
	if failed := embedtest.Failures(r.t, h.Handle, recs...); len(failed) != 0 {
		r.t.Fatalf("failed records: %v", failed)
	}
}

func (r *sessionRig) state_(u string) crawlstate.State {
	r.t.Helper()
	got, err := r.state.Get(context.Background(), crawl, keyOf(r.t, u))
	if err != nil {
		r.t.Fatal(err)
	}
	return got.State
}

// stored is every byte the blob store holds, each gzip member read out.
func (r *sessionRig) stored() []byte {
	r.t.Helper()
	var all bytes.Buffer
	err := filepath.WalkDir(r.be.BlobDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		all.Write(b)
		if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
			plain, err := io.ReadAll(zr)
			if err != nil {
				return fmt.Errorf("gunzip %s: %w", p, err)
			}
			all.Write(plain)
		}
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return all.Bytes()
}

// A host with session: true keeps the cookie its front page set across invocations: a later
// batch, in a fresh handler, sends it and gets the page behind the consent wall. The WARC files
// keep that cookies were set and sent, never their value.
func TestASessionsCookiesLastAcrossInvocations(t *testing.T) {
	site := newConsentSite(t)
	r := newSessionRig(t, "version: 1\nseeds: ["+site.srv.URL+"/]\nhosts:\n  127.0.0.1:\n    session: true\n")
	front, inner := site.srv.URL+"/", site.srv.URL+"/a"
	r.invoke(front)
	r.invoke(inner)
	if got := r.state_(inner); got != crawlstate.Fetched {
		t.Fatalf("the page behind the consent wall ended %s, want fetched", got)
	}
	if got, want := site.cookieOf("/a"), "consent="+consentValue; got != want {
		t.Errorf("the later invocation sent Cookie %q, want %q", got, want)
	}
	all := r.stored()
	if bytes.Contains(all, []byte(consentValue)) {
		t.Errorf("the stored files hold the consent cookie's value")
	}
	if !bytes.Contains(all, []byte("Set-Cookie: [redacted]")) || !bytes.Contains(all, []byte("Cookie: [redacted]")) {
		t.Errorf("the WARC records do not show the redacted Set-Cookie and Cookie headers")
	}
	// Two invocations: one jar write (the first sets the cookie, the second sets none).
	if w := r.jars.Writes(); w != 1 {
		t.Errorf("cookie jar writes = %d, want 1", w)
	}
}

// A crawl whose hosts keep no session reads and writes no cookie jar, and sends no cookie a
// page set: the page behind the consent wall ends failed (the site's 403).
func TestNoSessionNoJar(t *testing.T) {
	site := newConsentSite(t)
	r := newSessionRig(t, "version: 1\nseeds: ["+site.srv.URL+"/]\nhosts:\n  127.0.0.1:\n    rate: 100\n")
	r.invoke(site.srv.URL + "/")
	r.invoke(site.srv.URL + "/a")
	if got := r.state_(site.srv.URL + "/a"); got != crawlstate.Failed {
		t.Errorf("without a session, the page behind the wall ended %s, want failed", got)
	}
	if c := site.cookieOf("/a"); strings.Contains(c, "consent") {
		t.Errorf("without a session, the request sent Cookie %q", c)
	}
	if n := r.jars.Calls(); n != 0 {
		t.Errorf("a crawl without a session made %d calls on cookie jars, want 0", n)
	}
}
