package purge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/session"
	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/ops/purge"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// crawled is a crawl of a loopback site of five pages, on the embedded backend, with its
// index built.
type crawled struct {
	state, crawl, site string
}

func crawlSite(t *testing.T) crawled {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `<html><body>page %s <a href="/p1">1</a> <a href="/p2">2</a> <a href="/p3">3</a> <a href="/p4">4</a></body></html>`, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	state := t.TempDir()
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte(srv.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := cli.Main(context.Background(), []string{"run", "--json", "--quiet", "--allow-net", "127.0.0.0/8", "--host-rps", "0",
		"--state", state, seeds}, &out, &errOut); code != 0 {
		t.Fatalf("crawl run: exit %d\n%s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var sum struct{ Crawl string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	if code := cli.Main(context.Background(), []string{"index", "--state", state, sum.Crawl}, io.Discard, &errOut); code != 0 {
		t.Fatalf("crawl index: exit %d\n%s", code, errOut.String())
	}
	return crawled{state: state, crawl: sum.Crawl, site: srv.URL}
}

// copyState copies a state directory, so that one crawl is purged twice.
func copyState(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// victim is a page whose response record another page's follows in its WARC file (from the
// indexes beside the files), so that purging it moves that page.
func victim(t *testing.T, be *cli.Backend, c crawled) string {
	t.Helper()
	ctx := context.Background()
	keys, err := be.Blobs.List(ctx, "pages/"+c.crawl+"/")
	if err != nil {
		t.Fatal(err)
	}
	indexes := map[string][]byte{}
	for _, k := range keys {
		if strings.HasSuffix(k, ".cdxj") {
			if indexes[k], err = be.Blobs.Get(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e2etest.SharedFilePage(t, indexes, "")
}

// every is the embedded backend's table read whole, which the port does not do.
func every(be *cli.Backend) interface {
	Each(context.Context, func(table.Key, table.Item) error) error
} {
	return be.Table.(*sqlite.Table)
}

// open opens the embedded backend on state, closed when t ends.
func open(t *testing.T, state string) *cli.Backend {
	t.Helper()
	be, err := cli.OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// dump is every row and every object of a backend but the audit records and the opt-out list
// (which hold times).
func dump(t *testing.T, be *cli.Backend) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	err := every(be).Each(ctx, func(key table.Key, it table.Item) error {
		if key != optout.Key {
			b, _ := json.Marshal(it)
			out["row "+key.String()] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := be.Blobs.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasPrefix(k, purge.AuditPrefix) {
			continue
		}
		b, err := be.Blobs.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		out["object "+k] = string(b)
	}
	return out
}

// failingTable fails the first Update that fail selects.
type failingTable struct {
	table.Table
	fail   func(key table.Key, u table.Update) bool
	failed bool
}

var errInjected = errors.New("injected fault")

func (f *failingTable) Update(ctx context.Context, key table.Key, u table.Update, c table.Cond) (table.Item, error) {
	if !f.failed && f.fail(key, u) {
		f.failed = true
		return nil, errInjected
	}
	return f.Table.Update(ctx, key, u, c)
}

// failingBlobs fails the first Put that fail selects.
type failingBlobs struct {
	purge.Blobs
	fail   func(key string) bool
	failed bool
}

func (f *failingBlobs) Put(ctx context.Context, key string, body []byte, contentType string) error {
	if !f.failed && f.fail(key) {
		f.failed = true
		return errInjected
	}
	return f.Blobs.Put(ctx, key, body, contentType)
}

// TestAnInterruptedPurgeRunAgainEndsAsAnUninterruptedOne breaks a purge at a named step, runs it
// again, and compares every row and object with a copy of the same crawl purged in one go.
func TestAnInterruptedPurgeRunAgainEndsAsAnUninterruptedOne(t *testing.T) {
	c := crawlSite(t)
	steps := []struct {
		name  string
		table func(key table.Key, u table.Update) bool
		blobs func(key string) bool
	}{
		{name: "after the WARC file is rewritten, before the other pages' offsets move",
			table: func(key table.Key, u table.Update) bool {
				kind := crawlstate.KindOf(key)
				return (kind == "url" || kind == "groups") && len(u.Set) > 0
			}},
		{name: "after the WARC file is rewritten, before the index beside it is",
			blobs: func(key string) bool { return strings.HasSuffix(key, ".warc.gz.cdxj") }},
		{name: "after the table's items are erased, before the records files are rewritten",
			blobs: func(key string) bool { return strings.HasPrefix(key, "records/") }},
		{name: "before the crawl's index is rebuilt",
			blobs: func(key string) bool { return strings.HasPrefix(key, "indexes/") }},
	}
	var want map[string]string
	var url string
	{
		be, err := cli.OpenEmbedded(copyState(t, c.state))
		if err != nil {
			t.Fatal(err)
		}
		url = victim(t, be, c)
		p := purge.Purger{T: be.Table, B: be.Blobs}
		rep, err := p.Purge(context.Background(), purge.Request{Target: urlEntry(t, url), Reason: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if tot := rep.Totals(); tot.PagesMoved == 0 || len(tot.WARCFilesRewritten) != 1 {
			t.Fatalf("the uninterrupted purge moved %d pages and rewrote %d files; want a page moved in one", tot.PagesMoved, len(tot.WARCFilesRewritten))
		}
		want = dump(t, be)
		be.Close()
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			be := open(t, copyState(t, c.state))
			ft := &failingTable{Table: be.Table, fail: func(table.Key, table.Update) bool { return false }}
			fb := &failingBlobs{Blobs: be.Blobs, fail: func(string) bool { return false }}
			if step.table != nil {
				ft.fail = step.table
			}
			if step.blobs != nil {
				fb.fail = step.blobs
			}
			req := purge.Request{Target: urlEntry(t, url), Reason: "test"}
			if _, err := (&purge.Purger{T: ft, B: fb}).Purge(context.Background(), req); !errors.Is(err, errInjected) {
				t.Fatalf("the interrupted purge returned %v, want the injected fault", err)
			}
			if _, err := (&purge.Purger{T: be.Table, B: be.Blobs}).Purge(context.Background(), req); err != nil {
				t.Fatalf("the purge run again: %v", err)
			}
			got := dump(t, be)
			for k := range maps.Keys(want) {
				if got[k] != want[k] {
					t.Errorf("%s differs from the uninterrupted purge's:\n got %.300s\nwant %.300s", k, got[k], want[k])
				}
			}
			for k := range maps.Keys(got) {
				if _, ok := want[k]; !ok {
					t.Errorf("%s is left, and the uninterrupted purge left none", k)
				}
			}
		})
	}
}

// TestDryRunChangesNothing: a dry run reports the page and leaves every row and object as it was.
func TestDryRunChangesNothing(t *testing.T) {
	c := crawlSite(t)
	be := open(t, c.state)
	before := dump(t, be)
	url := victim(t, be, c)
	rep, err := (&purge.Purger{T: be.Table, B: be.Blobs, DryRun: true}).Purge(context.Background(),
		purge.Request{Target: urlEntry(t, url), Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if tot := rep.Totals(); !slices.Equal(tot.URLs, []string{url}) || tot.WARCRecords != 2 || tot.RecordLines != 1 {
		t.Errorf("dry run report %+v; want the URL, its two WARC records and its record", tot)
	}
	if rep.Tombstone != nil || rep.Audit != "" {
		t.Errorf("a dry run left a tombstone (%v) or an audit record (%q)", rep.Tombstone, rep.Audit)
	}
	if after := dump(t, be); !maps.Equal(before, after) {
		t.Error("a dry run changed the stores")
	}
	list, err := (optout.Store{T: be.Table}).List(context.Background())
	if err != nil || len(list) != 0 {
		t.Errorf("after a dry run the opt-out list is %v, %v; want it empty", list, err)
	}
}

// TestHostPurgeErasesEveryPageOfTheHost: a host purge erases every page of the site, deletes the
// files that held nothing else and the crawl's index, and leaves the host on the opt-out list.
func TestHostPurgeErasesEveryPageOfTheHost(t *testing.T) {
	c := crawlSite(t)
	be := open(t, c.state)
	ctx := context.Background()
	target, err := optout.NewEntry(optout.Host, "127.0.0.1", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// The host kept a session: its cookie jar goes with it.
	site := mustURL(t, c.site)
	set := session.Learn(site, []*http.Cookie{{Name: "sid", Value: "purge-me-cookie", Path: "/"}}, time.Now())
	if _, err := crawlstate.NewSessions(be.Table, nil).SaveJar(ctx, c.crawl, site.Host, set, "T"); err != nil {
		t.Fatal(err)
	}
	var lines []string
	rep, err := (&purge.Purger{T: be.Table, B: be.Blobs, Progress: func(l string) { lines = append(lines, l) }}).Purge(ctx,
		purge.Request{Target: target, Reason: "owner's request", Crawls: []string{c.crawl}})
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Totals().CookieJars; n != 1 {
		t.Errorf("host purge deleted %d cookie jars, want 1", n)
	}
	if tot := rep.Totals(); len(tot.URLs) != 5 || len(tot.WARCFilesRewritten) != 0 || len(tot.WARCFilesDeleted) == 0 {
		t.Errorf("host purge: %d URLs, %d files rewritten, %d deleted; want 5 URLs and every file deleted",
			len(tot.URLs), len(tot.WARCFilesRewritten), len(tot.WARCFilesDeleted))
	}
	if len(lines) == 0 {
		t.Error("no progress was reported")
	}
	for _, prefix := range []string{"pages/" + c.crawl + "/", "records/crawl=" + c.crawl + "/", "indexes/"} {
		if keys, err := be.Blobs.List(ctx, prefix); err != nil || len(keys) != 0 {
			t.Errorf("%s after a host purge: %q, %v; want nothing", prefix, keys, err)
		}
	}
	var left []string
	every(be).Each(ctx, func(key table.Key, it table.Item) error {
		b, _ := json.Marshal(it)
		if key != optout.Key && (strings.Contains(string(b), "127.0.0.1") || strings.Contains(key.String(), "127.0.0.1") ||
			strings.Contains(string(b), "purge-me-cookie")) {
			left = append(left, key.String())
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("rows still naming the host after its purge: %q", left)
	}
	if e, ok := optout.Match(mustList(t, be), mustURL(t, c.site+"/any")); !ok || e.Kind != optout.Host {
		t.Errorf("the host is not on the opt-out list after its purge")
	}
}

// TestBadRequests: what cannot be purged is refused with an error that says why, before
// anything is changed.
func TestBadRequests(t *testing.T) {
	c := crawlSite(t)
	be := open(t, c.state)
	before := dump(t, be)
	p := &purge.Purger{T: be.Table, B: be.Blobs}
	for _, tt := range []struct {
		req  purge.Request
		want string
	}{
		{purge.Request{Target: urlEntry(t, c.site+"/p1"), Crawls: []string{"no-such-crawl"}}, "no such crawl"},
		{purge.Request{Target: optout.Entry{Kind: optout.Prefix, Value: c.site + "/"}}, "want a host or a URL"},
	} {
		if _, err := p.Purge(context.Background(), tt.req); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Purge(%+v) = %v, want an error saying %q", tt.req, err, tt.want)
		}
	}
	if after := dump(t, be); !maps.Equal(before, after) {
		t.Error("a refused purge changed the stores")
	}
}

func urlEntry(t *testing.T, u string) optout.Entry {
	t.Helper()
	e, err := optout.NewEntry(optout.URL, u, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustList(t *testing.T, be *cli.Backend) []optout.Entry {
	t.Helper()
	l, err := (optout.Store{T: be.Table}).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustURL(t *testing.T, raw string) *neturl.URL {
	t.Helper()
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
