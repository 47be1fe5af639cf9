package fetcher_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
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
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

// specCrawls gives every crawl the same settings, as specstore would for a crawl with a spec.
type specCrawls struct{ c *crawlspec.Crawl }

func (s specCrawls) For(context.Context, string) (*crawlspec.Crawl, error) { return s.c, nil }

// A crawl whose spec sets tls_fingerprint: chrome and user_agent: browser fetches its robots.txt
// and its page with Chrome's ClientHello, over HTTP/2, and with Chrome's User-Agent, though the
// handler's client has Go's fingerprint and the crawler's own User-Agent. The server's view of
// each handshake and request is the oracle.
func TestASpecsFingerprintReachesTheRequests(t *testing.T) {
	type seen struct {
		grease bool
		proto  string
		ua     string
		path   string
	}
	var mu sync.Mutex
	var hellos []bool // whether each ClientHello had GREASE (Chrome's, never Go's)
	var reqs []seen
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reqs = append(reqs, seen{proto: r.Proto, ua: r.UserAgent(), path: r.URL.Path})
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "<html><body>hello</body></html>")
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.TLS = &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		hellos = append(hellos, slices.ContainsFunc(chi.CipherSuites, func(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }))
		return nil, nil
	}}
	srv.StartTLS()
	defer srv.Close()

	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	guard := netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	client, err := httpfetch.New(httpfetch.Options{UserAgent: userAgent, Guard: guard, RootCAs: roots, TotalTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	spec := &crawlspec.Settings{Version: crawlspec.Version, TLSFingerprint: crawlspec.FingerprintChrome, UserAgent: httpfetch.UserAgentBrowser}
	c, err := spec.Over(crawlspec.Crawl{Rules: scope.DefaultRules(), UserAgent: userAgent})
	if err != nil {
		t.Fatal(err)
	}
	be := embedtest.Open(t, fetchQ, parseQ)
	cfg := fetcher.DefaultConfig()
	cfg.FetchQueue, cfg.ParseQueue = fetchQ, parseQ
	cfg.HostRPS, cfg.HostConcurrency = 0, 0
	state := crawlstate.New(be.Table)
	h := fetcher.New(cfg, withState(state, fetcher.Deps{HTTP: client, Robots: robots.New(client, userAgent, time.Hour),
		Scope: scope.DefaultRules(), Guard: guard, Pages: be.Blobs, Send: be.Queue, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Crawls: specCrawls{c}}))

	page := srv.URL + "/page"
	if _, err := state.Admit(context.Background(), crawl, keyOf(t, page), page, page, 0, "links"); err != nil {
		t.Fatal(err)
	}
	body, err := message.Encode(message.Fetch{Header: message.Header{Crawl: crawl}, Target: message.Target{URL: page, Root: page}})
	if err != nil {
		t.Fatal(err)
	}
	rec := events.SQSMessage{MessageId: "msg-1", Body: body, EventSource: "aws:sqs",
		Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1795982400000"}}
	if failed := embedtest.Failures(t, h.Handle, rec); len(failed) != 0 {
		t.Fatalf("failed records: %v", failed)
	}
	u, err := state.Get(context.Background(), crawl, keyOf(t, page))
	if err != nil || u.State != crawlstate.Fetched {
		t.Fatalf("the page is %+v, %v; want fetched", u, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hellos) == 0 || slices.Contains(hellos, false) {
		t.Errorf("ClientHellos with GREASE: %v; want Chrome's for every connection", hellos)
	}
	if len(reqs) != 2 {
		t.Fatalf("requests %+v, want robots.txt and the page", reqs)
	}
	for _, r := range reqs {
		if r.proto != "HTTP/2.0" || r.ua != httpfetch.ChromeUserAgent {
			t.Errorf("%s came over %s with User-Agent %q; want HTTP/2.0 and Chrome's", r.path, r.proto, r.ua)
		}
	}
}
