package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// twoHosts serves a 5-page demo site on 127.0.0.1 whose home page also links to a 5-page demo
// site on 127.0.0.2, and writes a seed file of the first site's home page.
func twoHosts(t *testing.T) (first, second *demosite.Site, seedFile string) {
	t.Helper()
	second = demosite.New(5, 2, 500)
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listen on 127.0.0.2: %v", err)
	}
	srv2 := httptest.NewUnstartedServer(second)
	srv2.Listener.Close()
	srv2.Listener = ln
	srv2.Start()
	t.Cleanup(srv2.Close)
	first = demosite.New(5, 2, 500)
	srv1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" { // the demo site's home page, after a link to the other host
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<html><body><a href="%s/">the other host</a></body></html>`, srv2.URL)
		}
		first.ServeHTTP(w, r)
	}))
	t.Cleanup(srv1.Close)
	return first, second, writeFile(t, "seeds.txt", srv1.URL+"/\n")
}

// TestAChangedFlagReconsidersWhatItRefused runs a crawl that fetches a site but refuses its link to
// another host, for an --exclude pattern and then for the address, and runs the same command again with the
// flag that refused it changed: the run says so, fetches the other host's pages, and fetches no
// page of the first site again. Each site's count of what it served is the oracle.
func TestAChangedFlagReconsidersWhatItRefused(t *testing.T) {
	tests := []struct {
		name, class, flag string
		before, after     []string
	}{
		{"exclude", "scope", "--exclude", []string{"--allow-net", "127.0.0.0/8", "--scope", "any", "--exclude", `127\.0\.0\.2`},
			[]string{"--allow-net", "127.0.0.0/8", "--scope", "any"}},
		{"allow-net", "ssrf", "--allow-net", []string{"--allow-net", "127.0.0.1", "--scope", "any"}, []string{"--allow-net", "127.0.0.0/8", "--scope", "any"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, second, seeds := twoHosts(t)
			dir := t.TempDir()
			run := func(flags []string) (int, Summary, string) {
				args := append([]string{"run", "--state", "st", "--host-rps", "0", "--json"}, flags...)
				code, stdout, stderr := runBin(t, dir, nil, append(args, seeds)...)
				return code, lastJSON(t, stdout), stderr
			}
			code, s, stderr := run(tt.before)
			if code != ExitOK || s.Classes[tt.class] != 1 || second.Fetched() != 0 {
				t.Fatalf("the first run: exit %d, classes %v, the other host served %d pages; want 0, one %s, none\n%s",
					code, s.Classes, second.Fetched(), tt.class, stderr)
			}
			if tt.class == "ssrf" && !strings.Contains(stderr, "add --allow-net 127.0.0.2 and run the command again (the run reconsiders the URLs refused)") {
				t.Errorf("the first run does not say that the same command with --allow-net reconsiders the URL refused:\n%s", stderr)
			}
			fetchedFirst := first.Fetched()
			code, s, stderr = run(tt.after)
			if code != ExitOK || !strings.Contains(stderr, tt.flag+" changed since the crawl's last run: reconsidering the 1 URLs it refused ("+tt.class+" 1)") {
				t.Fatalf("the run with %s changed: exit %d, and it does not say it reconsiders the URL refused\n%s", tt.flag, code, stderr)
			}
			if second.Fetched() != 5 || first.Fetched() != fetchedFirst || len(first.Repeats()) != 0 || len(second.Repeats()) != 0 {
				t.Errorf("the other host served %d pages, want 5; the first %d, want the same %d, none twice (%v %v)",
					second.Fetched(), first.Fetched(), fetchedFirst, first.Repeats(), second.Repeats())
			}
			if s.Classes[tt.class] != 0 || s.Fetched != int64(fetchedFirst+5) || s.Pending != 0 {
				t.Errorf("summary: %d fetched, %d pending, classes %v; want %d, 0 and no %s", s.Fetched, s.Pending, s.Classes, fetchedFirst+5, tt.class)
			}
			code, _, stderr = run(tt.after)
			if code != ExitOK || !strings.Contains(stderr, "already ended") || strings.Contains(stderr, "reconsidering") {
				t.Errorf("once more with the same flags: exit %d, want the crawl shown as ended, nothing reconsidered\n%s", code, stderr)
			}
		})
	}
}

// TestAWiderScopeOrDepthSendsTheLinksAgain: links out of scope, or past the last depth, are never
// recorded, so a run with a wider --scope, or a deeper --max-depth, reads the pages they were found
// on again and sends their links: the pages they left out are fetched, none twice, and no page of
// the crawl is fetched again. The sites' counts of what they served are the oracle.
func TestAWiderScopeOrDepthSendsTheLinksAgain(t *testing.T) {
	t.Run("scope", func(t *testing.T) {
		first, second, seeds := twoHosts(t)
		dir := t.TempDir()
		args := []string{"run", "--state", "st", "--host-rps", "0", "--allow-net", "127.0.0.0/8", "--json"}
		if code, _, stderr := runBin(t, dir, nil, append(args, seeds)...); code != ExitOK || second.Fetched() != 0 {
			t.Fatalf("--scope host: exit %d, the other host served %d pages, want 0 and none\n%s", code, second.Fetched(), stderr)
		}
		before := first.Fetched()
		code, stdout, stderr := runBin(t, dir, nil, append(args, "--scope", "any", seeds)...)
		if code != ExitOK || !strings.Contains(stderr, "--scope changed since the crawl's last run: sending the links of") {
			t.Fatalf("--scope any: exit %d, and the run does not say it sends the links again\n%s", code, stderr)
		}
		if second.Fetched() != 5 || first.Fetched() != before || len(first.Repeats())+len(second.Repeats()) != 0 {
			t.Errorf("--scope any: the other host served %d pages, want 5; the first %d, want %d; twice: %v %v",
				second.Fetched(), first.Fetched(), before, first.Repeats(), second.Repeats())
		}
		if s := lastJSON(t, stdout); s.Fetched != int64(before+5) || s.Pending != 0 {
			t.Errorf("summary: %d fetched, %d pending; want %d and 0", s.Fetched, s.Pending, before+5)
		}
	})
	t.Run("depth", func(t *testing.T) {
		site, seeds := demoSeeds(t, 40, 3, 500)
		dir := t.TempDir()
		args := []string{"run", "--state", "st", "--host-rps", "0", "--allow-net", "127.0.0.0/8", "--json"}
		if code, _, stderr := runBin(t, dir, nil, append(args, "--max-depth", "1", seeds)...); code != ExitOK {
			t.Fatalf("--max-depth 1: exit %d\n%s", code, stderr)
		}
		shallow := site.Fetched()
		if shallow >= 40 {
			t.Fatalf("--max-depth 1 fetched all %d pages: the test needs a deeper site", shallow)
		}
		code, stdout, stderr := runBin(t, dir, nil, append(args, "--max-depth", "-1", seeds)...)
		if code != ExitOK || !strings.Contains(stderr, "--max-depth changed since the crawl's last run: sending the links of") {
			t.Fatalf("--max-depth -1: exit %d, and the run does not say it sends the links again\n%s", code, stderr)
		}
		if site.Fetched() != 40 || len(site.Repeats()) != 0 {
			t.Errorf("after --max-depth 1 (%d pages), then -1: the site served %d pages, want all 40, none twice (%v)", shallow, site.Fetched(), site.Repeats())
		}
		if s := lastJSON(t, stdout); s.Fetched != 40 || s.Pending != 0 {
			t.Errorf("summary: %d fetched, %d pending; want 40 and 0", s.Fetched, s.Pending)
		}
	})
}

// TestReconsiderReadsTheSeedsOnlyWhenARefusedURLNeedsThem: the seed file is parsed again only for
// a URL refused at its admission, whose item names no scope root. A new crawl (no flags on record)
// does not parse it, and a crawl with such a URL parses it once and sends the URL from the seed of
// its host, read back from the schedule queue.
func TestReconsiderReadsTheSeedsOnlyWhenARefusedURLNeedsThem(t *testing.T) {
	ctx := context.Background()
	be, err := OpenEmbedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	res, err := be.Setup(ctx, QueueSettings{Visibility: time.Minute, MaxReceiveCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	st := crawlstate.New(be.Table)
	const crawl, seed, refused = "c1", "http://127.0.0.2/docs/", "http://127.0.0.2/docs/secret"
	parsed := 0
	seeds := func() seedRoots {
		parsed++
		return rootsOf([]string{"http://127.0.0.1/", seed, "http://127.0.0.2/other/"})
	}
	now := refusalFlags{Scope: "host", MaxDepth: -1}

	if r, err := reconsider(ctx, be, res, st, crawl, now, seeds, "test"); err != nil || r.any() || parsed != 0 {
		t.Fatalf("a new crawl: reconsidered %+v, err %v, the seeds parsed %d times; want nothing, no error, none", r, err, parsed)
	}

	was := now
	was.Exclude = []string{"secret"}
	if err := keepRefusalFlags(ctx, be, crawl, was); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reject(ctx, crawl, urlnorm.Key(refused), refused, 2, errclass.Errorf(errclass.Scope, "excluded")); err != nil {
		t.Fatal(err)
	}
	r, err := reconsider(ctx, be, res, st, crawl, now, seeds, "test")
	if err != nil || r.n != 1 || parsed != 1 {
		t.Fatalf("--exclude dropped: reconsidered %d URLs, err %v, the seeds parsed %d times; want 1, no error, once", r.n, err, parsed)
	}
	msgs, err := be.Queue.Receive(ctx, res.Schedule, 10, time.Minute, 0)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("schedule queue: %d messages, err %v; want 1", len(msgs), err)
	}
	m, err := message.DecodeLinks(msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if m.Root != seed || m.Depth != 2 || len(m.URLs) != 1 || m.URLs[0] != refused {
		t.Errorf("sent again: root %q, depth %d, urls %v; want root %q (the seed of its host), depth 2, [%s]", m.Root, m.Depth, m.URLs, seed, refused)
	}
}

// TestSeedRootsTakeTheFirstSeedOfTheURLsHost: a URL refused at its admission is checked again
// from the first seed of its host (port included), else from the first seed of all.
func TestSeedRootsTakeTheFirstSeedOfTheURLsHost(t *testing.T) {
	r := rootsOf([]string{"https://a.example/", "https://b.example/x/", "https://b.example/y/", "https://b.example:8443/"})
	for u, want := range map[string]string{
		"https://b.example/y/page": "https://b.example/x/",
		"https://b.example:8443/p": "https://b.example:8443/",
		"https://c.example/":       "https://a.example/",
		"https://a.example/deep/1": "https://a.example/",
		"%%not a url":              "https://a.example/",
	} {
		if got := r.rootFor(u); got != want {
			t.Errorf("rootFor(%q) = %q, want %q", u, got, want)
		}
	}
	if got := rootsOf(nil).rootFor("https://a.example/"); got != "" {
		t.Errorf("without seeds: rootFor = %q, want none", got)
	}
}
