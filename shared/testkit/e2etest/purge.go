package e2etest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// Raw reads a backend's stores directly, not through the crawler's adapters: the oracle of
// CheckPurge.
type Raw struct {
	// Rows returns every stored row as its key and its stored text: each table item, keyed as
	// table.Key.String writes it (partition|sort), and, on the embedded backend, each queue message.
	Rows func(t testing.TB) map[string]string
	// Objects returns every object of the bucket, by key.
	Objects func(t testing.TB) map[string][]byte
	// Files, when set, returns the bytes of the files the backend keeps its rows in (the
	// embedded backend's SQLite file and its write-ahead log), by name: a row deleted but left
	// on a free page of the file is still there.
	Files func(t testing.TB) map[string][]byte
}

// CheckPurge crawls a site on loopback whose pages each carry a marker of their own, builds the
// crawl's index, and purges one page with `crawl purge --url`: a page whose WARC file holds another
// page after it, so that the file is rewritten and that page moves. The oracles are raw reads of the
// table and the bucket, warcio.js, and the site's own log of requests:
//   - a dry run lists the page and changes no row and no object;
//   - after the purge no row and no object holds the page's marker or URL, but the opt-out list's
//     tombstone and the audit record under audit/purge/, which says what went and why;
//   - warcio.js reads every WARC file (digests, warcinfo first, each request by its response, and
//     every line of the index beside it reads back its record), and every line of the crawl's
//     index and every offset stored in a row or a records file reads back the response record of
//     its URL;
//   - a later crawl of the same seeds requests every page but the purged one.
func CheckPurge(t testing.TB, main MainFunc, runFlags, adminFlags []string, raw Raw) {
	t.Helper()
	c := &purgeCheck{t: t, run: runner(t, main), runFlags: runFlags, adminFlags: adminFlags, raw: raw}
	srv := purgeSite(&c.log)
	defer srv.Close()
	c.seeds = filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(c.seeds, []byte(srv.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	all := []string{"/", "/p1", "/p2", "/p3", "/p4", "/robots.txt"} // sorted, as requestLog.since returns them
	crawl, fetched, served := c.crawlOnce()
	if !slices.Equal(served, all) || fetched != 5 {
		t.Fatalf("the first crawl: the site served %v and the crawl fetched %d; want %v and 5", served, fetched, all)
	}
	c.admin(0, "index", crawl)
	before := raw.Objects(t)
	secret := victim(t, before, crawl, srv.URL)
	mark := purgeMarker + strings.TrimPrefix(secret, srv.URL+"/")
	if !anyHolds(before, mark) {
		t.Fatalf("before the purge no object holds the page's mark: the oracle reads nothing")
	}
	c.checkDryRun(secret, before, raw.Rows(t))
	auditKey := c.purge(secret, crawl)

	objects, rows := raw.Objects(t), raw.Rows(t)
	checkErased(t, raw, objects, rows, secret, mark)
	checkAudit(t, objects, auditKey, secret)
	responses := checkArchive(t, objects, crawl, rows)
	if responses != 4 {
		t.Errorf("warcio.js read %d response records after the purge, want the 4 pages left", responses)
	}

	// A later crawl of the same seeds fetches every page but the purged one.
	again, fetched, served := c.crawlOnce("--fresh")
	if again == crawl {
		t.Errorf("crawl run --fresh went on with %s", crawl)
	}
	want := slices.DeleteFunc(slices.Clone(all), func(p string) bool { return srv.URL+p == secret })
	if !slices.Equal(served, want) || fetched != 4 {
		t.Errorf("the crawl after the purge: the site served %v and the crawl fetched %d; want %v and 4", served, fetched, want)
	}
}

// purgeMarker starts the text each leaf page of CheckPurge's site carries, followed by the
// page's name: what no row or object may hold once the page is purged.
const purgeMarker = "purge-marker-7c1e0d-"

// purgeSite serves CheckPurge's site, logging each request in log: no robots.txt, a root that
// links /p1 to /p4, and leaves that carry their marker in their title and body and link back.
func purgeSite(log *requestLog) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/", log.serve(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			fmt.Fprint(w, `<html><body><a href="/p1">1</a> <a href="/p2">2</a> <a href="/p3">3</a> <a href="/p4">4</a></body></html>`)
		default:
			fmt.Fprintf(w, `<html><head><title>%s%s</title></head><body>%s%s <a href="/">home</a></body></html>`,
				purgeMarker, r.URL.Path[1:], purgeMarker, r.URL.Path[1:])
		}
	}))
	return httptest.NewServer(mux)
}

// purgeCheck is what CheckPurge runs its commands with.
type purgeCheck struct {
	t                    testing.TB
	run                  func(wantCode int, args ...string) string
	runFlags, adminFlags []string
	raw                  Raw
	log                  requestLog
	seeds                string // the seed file, with the site's root
}

// admin runs an admin command (args[0]) with the admin flags, and fails unless it exits with
// wantCode.
func (c *purgeCheck) admin(wantCode int, args ...string) string {
	c.t.Helper()
	return c.run(wantCode, append(append([]string{args[0]}, c.adminFlags...), args[1:]...)...)
}

// crawlOnce crawls the seed file with extra flags, and returns the crawl, the pages it fetched,
// and the paths the site served meanwhile, sorted.
func (c *purgeCheck) crawlOnce(extra ...string) (crawl string, fetched int64, served []string) {
	c.t.Helper()
	_, from := c.log.since(0)
	out := c.run(0, append(append(append([]string{"run", "--json", "--quiet", "--allow-net", "127.0.0.0/8"}, c.runFlags...), extra...), c.seeds)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct {
		Crawl   string `json:"crawl"`
		Fetched int64  `json:"fetched"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		c.t.Fatalf("the summary is not JSON: %v\n%s", err, out)
	}
	served, _ = c.log.since(from)
	return sum.Crawl, sum.Fetched, served
}

// checkDryRun checks that `crawl purge --dry-run` lists the page and changes no object and no
// row of before and rowsBefore, and that a purge without a reason, with two targets or of an
// unknown crawl is refused.
func (c *purgeCheck) checkDryRun(secret string, before map[string][]byte, rowsBefore map[string]string) {
	c.t.Helper()
	dry := c.admin(0, "purge", "--dry-run", "--url", secret)
	if !strings.Contains(dry, secret) || !strings.Contains(dry, "dry run") {
		c.t.Errorf("crawl purge --dry-run does not list %s:\n%s", secret, dry)
	}
	if after := c.raw.Objects(c.t); !maps.EqualFunc(before, after, bytes.Equal) {
		c.t.Error("crawl purge --dry-run changed the bucket")
	}
	if after := c.raw.Rows(c.t); !maps.Equal(rowsBefore, after) {
		c.t.Error("crawl purge --dry-run changed the table")
	}
	c.admin(2, "purge", "--url", secret)                                              // no --reason
	c.admin(2, "purge", "--url", secret, "--host", "a.test", "--reason", "x")         // two targets
	c.admin(1, "purge", "--url", secret, "--crawl", "no-such-crawl", "--reason", "x") // unknown crawl
}

// purge purges the page with `crawl purge --json` and checks its report: the URL, its record,
// the link to it, the crawl's index, and a WARC file rewritten. It returns the audit record's key.
func (c *purgeCheck) purge(secret, crawl string) (auditKey string) {
	c.t.Helper()
	out := c.admin(0, "purge", "--json", "--url", secret, "--reason", "erasure request 42")
	var rep struct {
		Crawls []struct {
			URLs               []string `json:"urls"`
			WARCFilesRewritten []string `json:"warcFilesRewritten"`
			RecordLines        int      `json:"recordLines"`
			OutLinks           int      `json:"outLinks"`
			Indexes            []string `json:"indexesRewritten"`
		} `json:"crawls"`
		Audit string `json:"audit"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Crawls) != 1 {
		c.t.Fatalf("crawl purge --json: %v, %d crawls\n%s", err, len(rep.Crawls), out)
	}
	r := rep.Crawls[0]
	if !slices.Equal(r.URLs, []string{secret}) || r.RecordLines != 1 || r.OutLinks != 1 || !slices.Contains(r.Indexes, "indexes/"+crawl+".cdxj") {
		c.t.Errorf("purge report %+v; want the URL, its record, the link to it from / and the crawl's index", r)
	}
	if len(r.WARCFilesRewritten) == 0 {
		c.t.Fatalf("the purged page had a WARC file of its own: this check needs one it shares (report %s)", out)
	}
	return rep.Audit
}

// checkErased checks that no object (but the audit records), no row (but the opt-out list, which
// must hold the page's tombstone) and, when raw reads them, no file of the backend holds the
// purged page's URL or mark.
func checkErased(t testing.TB, raw Raw, objects map[string][]byte, rows map[string]string, secret, mark string) {
	t.Helper()
	for k, body := range objects {
		if strings.HasPrefix(k, "audit/purge/") {
			continue
		}
		if bytes.Contains(body, []byte(mark)) || bytes.Contains(body, []byte(secret)) {
			t.Errorf("after the purge, object %s still holds the purged page (%s)", k, excerpt(body, secret, mark))
		}
	}
	for k, v := range rows {
		if k == crawlstate.OptOutKey.String() {
			if !strings.Contains(v, secret) {
				t.Errorf("the opt-out list holds no tombstone of %s: %s", secret, v)
			}
			continue
		}
		if strings.Contains(v, mark) || strings.Contains(v, secret) || strings.Contains(k, secret) {
			t.Errorf("after the purge, row %s still names the purged page: %s", k, v)
		}
	}
	if raw.Files != nil {
		item := []byte(`"url":"` + secret + `"`) // a URL item or a message names it so; the tombstone does not
		for name, b := range raw.Files(t) {
			if bytes.Contains(b, item) || bytes.Contains(b, []byte(mark)) {
				t.Errorf("after the purge, the file %s still holds the purged page (%s)", name, excerpt(b, string(item), mark))
			}
		}
	}
}

// checkAudit checks that the audit record at key says which page went, why, and from which crawl.
func checkAudit(t testing.TB, objects map[string][]byte, key, secret string) {
	t.Helper()
	var audit struct {
		Target struct{ Value string } `json:"target"`
		Reason string                 `json:"reason"`
		Crawls []struct {
			URLs []string `json:"urls"`
		} `json:"crawls"`
	}
	if err := json.Unmarshal(objects[key], &audit); err != nil || audit.Target.Value != secret ||
		audit.Reason != "erasure request 42" || len(audit.Crawls) != 1 || !slices.Equal(audit.Crawls[0].URLs, []string{secret}) {
		t.Errorf("audit record %s: %v, %s", key, err, objects[key])
	}
}

// victim picks the page to purge: a leaf page (not the site's root) whose response record
// another page's follows in its WARC file, so that purging it rewrites the file and moves that page.
func victim(t testing.TB, objects map[string][]byte, crawl, site string) string {
	t.Helper()
	indexes := map[string][]byte{}
	for k, b := range objects {
		if strings.HasPrefix(k, "pages/"+crawl+"/") && strings.HasSuffix(k, ".cdxj") {
			indexes[k] = b
		}
	}
	return SharedFilePage(t, indexes, site+"/")
}

// SharedFilePage returns, from the indexes beside a crawl's WARC files (by key), the URL of a
// page other than skip whose response record another page's follows in its file: the page a
// purge test erases, so that its file is rewritten and a page in it moves.
func SharedFilePage(t testing.TB, indexes map[string][]byte, skip string) string {
	t.Helper()
	type line struct {
		url    string
		offset int64
	}
	for _, ix := range indexes {
		var lines []line
		for l := range bytes.Lines(ix) {
			parts := strings.SplitN(string(l), " ", 3)
			var f struct{ URL, Offset string }
			if len(parts) == 3 && json.Unmarshal([]byte(parts[2]), &f) == nil {
				o, _ := strconv.ParseInt(f.Offset, 10, 64)
				lines = append(lines, line{f.URL, o})
			}
		}
		slices.SortFunc(lines, func(a, b line) int { return int(a.offset - b.offset) })
		for i := 0; i+1 < len(lines); i++ {
			if lines[i].url != skip {
				return lines[i].url
			}
		}
	}
	t.Fatalf("no WARC file holds a page (but %s) with another page after it: the test needs one", skip)
	return ""
}

// requestLog is a test site's own log of the paths it was asked for.
type requestLog struct {
	mu    sync.Mutex
	paths []string
}

// serve logs each request's path, then serves it with h.
func (l *requestLog) serve(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.paths = append(l.paths, r.URL.Path)
		l.mu.Unlock()
		h(w, r)
	})
}

// since returns the paths logged from the n-th on, sorted, and how many are logged in all.
func (l *requestLog) since(n int) (paths []string, all int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	paths = slices.Clone(l.paths[n:])
	slices.Sort(paths)
	return paths, len(l.paths)
}

// runner returns a function that runs the crawl command with args and fails t unless it exits
// with wantCode, and returns its stdout.
func runner(t testing.TB, main MainFunc) func(wantCode int, args ...string) string {
	return func(wantCode int, args ...string) string {
		t.Helper()
		code, stdout, stderr := main(args...)
		if code != wantCode {
			t.Fatalf("crawl %s: exit %d, want %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, wantCode, stdout, stderr)
		}
		return stdout
	}
}

// anyHolds reports whether some object holds s.
func anyHolds(objects map[string][]byte, s string) bool {
	for _, b := range objects {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

func excerpt(b []byte, needles ...string) string {
	for _, n := range needles {
		if i := bytes.Index(b, []byte(n)); i >= 0 {
			return string(b[max(0, i-60):min(len(b), i+len(n)+60)])
		}
	}
	return ""
}
