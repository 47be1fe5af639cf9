package cli

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// robotsWatch serves a demo site and keeps the User-Agent of each robots.txt request.
type robotsWatch struct {
	site *demosite.Site
	mu   sync.Mutex
	uas  []string
}

func (w *robotsWatch) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		w.mu.Lock()
		w.uas = append(w.uas, r.UserAgent())
		w.mu.Unlock()
	}
	w.site.ServeHTTP(rw, r)
}

func (w *robotsWatch) agents() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.uas...)
}

func watchedSite(t *testing.T, pages int) (*robotsWatch, string) {
	t.Helper()
	w := &robotsWatch{site: demosite.New(pages, 3, 500)}
	srv := httptest.NewServer(w)
	t.Cleanup(srv.Close)
	return w, srv.URL
}

// A run of a URL list on a new state asks for the seeds' robots.txt while it opens its state
// (warmRobots): each site's robots.txt is still fetched once, with the run's User-Agent, and every
// page is crawled. The same command once the crawl has ended asks nothing, robots.txt included;
// and a crawl spec's robots.txt requests carry the spec's own User-Agent.
func TestTheSeedsRobotsTxtIsFetchedOnceWhileTheStateOpens(t *testing.T) {
	a, urlA := watchedSite(t, 12)
	b, urlB := watchedSite(t, 5)
	state := filepath.Join(t.TempDir(), "st")
	const ua = "warmbot/1.0 (+https://example.com/bot)"
	seeds := writeFile(t, "seeds.txt", urlA+"/\n"+urlA+"/p/3\n"+urlB+"/\n")
	args := []string{"run", "--state", state, "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--user-agent", ua, "--json", seeds}
	code, stdout, stderr := runMain(t, args...)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if s := lastJSON(t, stdout); !s.Finished || s.Fetched != 17 || a.site.Fetched() != 12 || b.site.Fetched() != 5 {
		t.Fatalf("fetched %d (%d and %d served), finished %v: want all 17 pages", s.Fetched, a.site.Fetched(), b.site.Fetched(), s.Finished)
	}
	for name, w := range map[string]*robotsWatch{"a": a, "b": b} {
		if got := w.agents(); len(got) != 1 || got[0] != ua {
			t.Errorf("site %s: robots.txt requests with User-Agents %q, want one with %q", name, got, ua)
		}
	}

	code, _, stderr = runMain(t, args...)
	if code != ExitOK || !strings.Contains(stderr, "already ended") {
		t.Fatalf("once more: exit %d, want 0 and that the crawl had ended\n%s", code, stderr)
	}
	if n, m := len(a.agents()), len(b.agents()); n != 1 || m != 1 {
		t.Errorf("the run of an ended crawl asked for robots.txt: %d and %d requests in all, want 1 and 1", n, m)
	}

	c, urlC := watchedSite(t, 4)
	const specUA = "specbot/2.0 (+https://example.com/spec)"
	spec := writeFile(t, "crawl.yaml", "version: 1\nseeds:\n  - "+urlC+"/\nuser_agent: "+specUA+"\n")
	code, _, stderr = runMain(t, "run", "--state", filepath.Join(t.TempDir(), "st"), "--allow-net", "127.0.0.0/8",
		"--host-rps", "0", "--user-agent", ua, "--json", spec)
	if code != ExitOK || c.site.Fetched() != 4 {
		t.Fatalf("spec: exit %d, %d pages served, want 0 and 4\n%s", code, c.site.Fetched(), stderr)
	}
	if got := c.agents(); len(got) != 1 || got[0] != specUA {
		t.Errorf("spec: robots.txt requests with User-Agents %q, want one with the spec's %q", got, specUA)
	}
}

// warmRobots asks for the robots.txt of the seeds' first hosts, as many as --concurrency, and
// returns without waiting for them; it asks nothing of a state that exists or for a crawl spec.
func TestWarmRobots(t *testing.T) {
	held := make(chan struct{})
	asked := make(chan string, 10) // each request, as it arrives
	site := func() string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked <- r.Host + r.URL.Path
			<-held
			http.NotFound(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	hosts := []string{site(), site(), site()}
	t.Cleanup(func() { close(held) }) // before the servers close: they wait for their handlers
	body := []byte(hosts[0] + "/a\n" + hosts[0] + "/b\nnot a url\n" + hosts[1] + "/\n" + hosts[2] + "/\n")
	o, err := parseRunFlags("run", []string{"--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--concurrency", "2", "seeds.txt"}, true)
	if err != nil {
		t.Fatal(err)
	}
	fx := warmRobots(t.Context(), o, body) // returns while every robots.txt is held
	if fx == nil {
		t.Fatal("warmRobots warmed nothing for a URL list on a new state")
	}
	defer fx.Close()
	want := map[string]int{strings.TrimPrefix(hosts[0], "http://") + "/robots.txt": 1, strings.TrimPrefix(hosts[1], "http://") + "/robots.txt": 1}
	got := map[string]int{}
	timeout := time.After(10 * time.Second)
	for range len(want) {
		select {
		case req := <-asked:
			got[req]++
		case <-timeout:
			t.Fatalf("requests %v after 10 s, want %v: the first two hosts' robots.txt, once each", got, want)
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("requests %v, want %v: the first two hosts' robots.txt, once each", got, want)
	}
	if _, err := os.Stat(filepath.Join(o.State, stateFile)); err == nil {
		t.Error("warmRobots made the state file")
	}

	if err := os.WriteFile(filepath.Join(o.State, stateFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if fx := warmRobots(t.Context(), o, body); fx != nil {
		t.Error("warmRobots warmed the cache for a state that exists: its crawl may have ended")
	}
	o.State, o.SeedFile = t.TempDir(), "crawl.yaml"
	if fx := warmRobots(t.Context(), o, []byte("version: 1\nseeds: ["+hosts[2]+"/]\nuser_agent: specbot/1.0\n")); fx != nil {
		t.Error("warmRobots warmed the cache for a crawl spec, whose settings decide its robots.txt requests")
	}
}

// firstOrigins takes each origin's first seed, in file order, and stops at n origins.
func TestFirstOrigins(t *testing.T) {
	body := []byte("\xEF\xBB\xBF# seeds\nhttp://a.test/1\n\nnot a url\nhttp://A.test/2\nhttps://a.test/\nhttp://b.test:8080/x\nhttp://c.test/\n")
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{1, []string{"http://a.test/1"}},
		{3, []string{"http://a.test/1", "https://a.test/", "http://b.test:8080/x"}},
		{9, []string{"http://a.test/1", "https://a.test/", "http://b.test:8080/x", "http://c.test/"}},
	} {
		if got := firstOrigins(body, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("firstOrigins(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
