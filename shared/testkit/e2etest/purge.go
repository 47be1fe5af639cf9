package e2etest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
)

// Raw reads a backend's stores directly, not through the crawler's adapters: the oracle of
// CheckPurge.
type Raw struct {
	// Rows returns every stored row as its key and its stored text: each table item and, on the
	// embedded backend, each queue message.
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
	const marker = "purge-marker-7c1e0d-"
	leaves := []string{"/p1", "/p2", "/p3", "/p4"}
	var log requestLog
	mux := http.NewServeMux()
	mux.Handle("/", log.serve(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			fmt.Fprint(w, `<html><body><a href="/p1">1</a> <a href="/p2">2</a> <a href="/p3">3</a> <a href="/p4">4</a></body></html>`)
		default:
			fmt.Fprintf(w, `<html><head><title>%s%s</title></head><body>%s%s <a href="/">home</a></body></html>`,
				marker, r.URL.Path[1:], marker, r.URL.Path[1:])
		}
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	run := runner(t, main)
	admin := func(wantCode int, args ...string) string {
		t.Helper()
		return run(wantCode, append(append([]string{args[0]}, adminFlags...), args[1:]...)...)
	}
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte(srv.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	crawlOnce := func(extra ...string) (crawl string, fetched int64, served []string) {
		t.Helper()
		_, from := log.since(0)
		out := run(0, append(append(append([]string{"run", "--json", "--quiet", "--allow-net", "127.0.0.0/8"}, runFlags...), extra...), seeds)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var sum struct {
			Crawl   string `json:"crawl"`
			Fetched int64  `json:"fetched"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
			t.Fatalf("the summary is not JSON: %v\n%s", err, out)
		}
		served, _ = log.since(from)
		return sum.Crawl, sum.Fetched, served
	}
	all := append([]string{"/", "/robots.txt"}, leaves...)
	slices.Sort(all)
	crawl, fetched, served := crawlOnce()
	if !slices.Equal(served, all) || fetched != 5 {
		t.Fatalf("the first crawl: the site served %v and the crawl fetched %d; want %v and 5", served, fetched, all)
	}
	admin(0, "index", crawl)
	before := raw.Objects(t)
	secret := victim(t, before, crawl, srv.URL)
	mark := marker + strings.TrimPrefix(secret, srv.URL+"/")
	if !anyHolds(before, mark) {
		t.Fatalf("before the purge no object holds the page's mark: the oracle reads nothing")
	}
	rowsBefore := raw.Rows(t)

	// A dry run lists the page and changes nothing.
	dry := admin(0, "purge", "--dry-run", "--url", secret)
	if !strings.Contains(dry, secret) || !strings.Contains(dry, "dry run") {
		t.Errorf("crawl purge --dry-run does not list %s:\n%s", secret, dry)
	}
	if after := raw.Objects(t); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Error("crawl purge --dry-run changed the bucket")
	}
	if after := raw.Rows(t); !maps.Equal(rowsBefore, after) {
		t.Error("crawl purge --dry-run changed the table")
	}
	admin(2, "purge", "--url", secret)                                              // no --reason
	admin(2, "purge", "--url", secret, "--host", "a.test", "--reason", "x")         // two targets
	admin(1, "purge", "--url", secret, "--crawl", "no-such-crawl", "--reason", "x") // unknown crawl

	out := admin(0, "purge", "--json", "--url", secret, "--reason", "erasure request 42")
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
		t.Fatalf("crawl purge --json: %v, %d crawls\n%s", err, len(rep.Crawls), out)
	}
	c := rep.Crawls[0]
	if !slices.Equal(c.URLs, []string{secret}) || c.RecordLines != 1 || c.OutLinks != 1 || !slices.Contains(c.Indexes, "indexes/"+crawl+".cdxj") {
		t.Errorf("purge report %+v; want the URL, its record, the link to it from / and the crawl's index", c)
	}
	if len(c.WARCFilesRewritten) == 0 {
		t.Fatalf("the purged page had a WARC file of its own: this check needs one it shares (report %s)", out)
	}

	objects, rows := raw.Objects(t), raw.Rows(t)
	for k, body := range objects {
		if strings.HasPrefix(k, "audit/purge/") {
			continue
		}
		if bytes.Contains(body, []byte(mark)) || bytes.Contains(body, []byte(secret)) {
			t.Errorf("after the purge, object %s still holds the purged page (%s)", k, excerpt(body, secret, mark))
		}
	}
	for k, v := range rows {
		if k == "x#optout" {
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
	var audit struct {
		Target struct{ Value string } `json:"target"`
		Reason string                 `json:"reason"`
		Crawls []struct {
			URLs []string `json:"urls"`
		} `json:"crawls"`
	}
	if err := json.Unmarshal(objects[rep.Audit], &audit); err != nil || audit.Target.Value != secret ||
		audit.Reason != "erasure request 42" || len(audit.Crawls) != 1 || !slices.Equal(audit.Crawls[0].URLs, []string{secret}) {
		t.Errorf("audit record %s: %v, %s", rep.Audit, err, objects[rep.Audit])
	}
	responses := checkArchive(t, objects, crawl, rows)
	if responses != 4 {
		t.Errorf("warcio.js read %d response records after the purge, want the 4 pages left", responses)
	}

	// A later crawl of the same seeds fetches every page but the purged one.
	again, fetched, served := crawlOnce("--fresh")
	if again == crawl {
		t.Errorf("crawl run --fresh went on with %s", crawl)
	}
	want := slices.DeleteFunc(slices.Clone(all), func(p string) bool { return srv.URL+p == secret })
	if !slices.Equal(served, want) || fetched != 4 {
		t.Errorf("the crawl after the purge: the site served %v and the crawl fetched %d; want %v and 4", served, fetched, want)
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

// checkArchive has warcio.js read the crawl's WARC files (with their indexes beside them), checks
// that every line of the crawl's index and every WARC offset stored in a row or a records file
// reads back the response record of its URL (with gzip and the bytes as stored), and returns the
// number of response records warcio.js read.
func checkArchive(t testing.TB, objects map[string][]byte, crawl string, rows map[string]string) int {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for k, b := range objects {
		if !strings.HasPrefix(k, "pages/"+crawl+"/") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(k, ".warc.gz") {
			files = append(files, p)
		}
	}
	if len(files) == 0 {
		t.Fatalf("crawl %s has no WARC file left", crawl)
	}
	sum := warctest.Check(t, files...)
	if sum.Resolved != sum.IndexLines || sum.IndexLines != sum.Responses {
		t.Errorf("warcio.js: %+v; want every response indexed and every index line resolved", sum)
	}
	type ref struct {
		key, url     string
		offset, size int64
	}
	var refs []ref
	ix := objects["indexes/"+crawl+".cdxj"]
	if ix == nil {
		t.Errorf("the crawl's index indexes/%s.cdxj is gone", crawl)
	}
	for line := range bytes.Lines(ix) {
		parts := strings.SplitN(strings.TrimSpace(string(line)), " ", 3)
		var f struct{ URL, Filename, Offset, Length string }
		if len(parts) != 3 || json.Unmarshal([]byte(parts[2]), &f) != nil {
			t.Errorf("crawl index line %q: not CDXJ", line)
			continue
		}
		o, _ := strconv.ParseInt(f.Offset, 10, 64)
		l, _ := strconv.ParseInt(f.Length, 10, 64)
		refs = append(refs, ref{"pages/" + crawl + "/" + f.Filename, f.URL, o, l})
	}
	// The records' refs ("warc": {"key", "offset", "length"}, with finalUrl) and the table's
	// ({"k", "o", "l"}, a JSON string in an attribute; "b" for a file named as fetch names them,
	// pages/<crawl>/<b>.warc.gz, as crawlstate shortens it).
	for k, b := range objects {
		if !strings.HasPrefix(k, "records/crawl="+crawl+"/") {
			continue
		}
		for line := range bytes.Lines(b) {
			var r struct {
				FinalURL string `json:"finalUrl"`
				WARC     struct {
					Key            string
					Offset, Length int64
				} `json:"warc"`
			}
			if json.Unmarshal(line, &r) == nil && r.WARC.Key != "" {
				refs = append(refs, ref{r.WARC.Key, r.FinalURL, r.WARC.Offset, r.WARC.Length})
			}
		}
	}
	tableRefs := 0
	for _, v := range rows {
		for _, s := range jsonStrings(v) {
			var p struct {
				K    string `json:"k"`
				B    string `json:"b"`
				O, L int64
				U    string `json:"u"`
			}
			if json.Unmarshal([]byte(s), &p) == nil && p.B != "" {
				p.K = "pages/" + crawl + "/" + p.B + ".warc.gz"
			}
			if strings.HasSuffix(p.K, ".warc.gz") {
				refs = append(refs, ref{p.K, p.U, p.O, p.L})
				tableRefs++
			}
		}
	}
	if tableRefs == 0 {
		t.Error("no row holds a WARC offset: the check of the table's offsets reads nothing")
	}
	for _, r := range refs {
		b := objects[r.key]
		if r.offset < 0 || r.size <= 0 || r.offset+r.size > int64(len(b)) {
			t.Errorf("offset %d+%d of %s (%s): outside the file's %d bytes", r.offset, r.size, r.key, r.url, len(b))
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(b[r.offset : r.offset+r.size]))
		if err != nil {
			t.Errorf("offset %d of %s: not a gzip member: %v", r.offset, r.key, err)
			continue
		}
		zr.Multistream(false)
		rec, err := io.ReadAll(zr)
		if err != nil || !bytes.Contains(rec, []byte("WARC-Type: response")) ||
			(r.url != "" && !bytes.Contains(rec, []byte("WARC-Target-URI: "+r.url+"\r\n"))) {
			t.Errorf("offset %d+%d of %s does not read back the response record of %q (%v)", r.offset, r.size, r.key, r.url, err)
		}
	}
	return sum.Responses
}

// jsonStrings returns the string values of a JSON object's attributes (a row as stored), and
// the row itself.
func jsonStrings(row string) []string {
	var m map[string]any
	if json.Unmarshal([]byte(row), &m) != nil {
		return []string{row}
	}
	var out []string
	for _, v := range m {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
