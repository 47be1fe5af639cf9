package e2etest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
)

// CheckPurgeSearchesEveryStore crawls a site of two hosts on loopback with a spec that extracts
// data, purges one page by URL and the other host whole, and then searches the raw bytes of every
// store (each row, each object: WARC files, their indexes, records, spec.json, seed reports; and,
// when raw reads them, the backend's files) for the purged URL and the purged host, its name and
// its spellings in attribute names. A hit fails the test unless docs/erasure.md lists its place
// as kept: the tombstones on the opt-out list, the audit records, the crawl's reports and seed
// files (the user's input), and the archived body of a page that is not purged (it is that page).
//
// The site makes every place a URL can be named hold them: the root links the purged page and
// the purged host (one link rel="nofollow"), names the purged page as its canonical URL, and its
// JSON-LD (extracted into data) names both; a kept page's canonical is on the purged host; the
// purged host answers its first request with a 429, so that the crawl notes it as throttled.
func CheckPurgeSearchesEveryStore(t testing.TB, main MainFunc, runFlags, adminFlags []string, raw Raw) {
	t.Helper()
	run := runner(t, main)
	var b429 atomic.Bool
	b := listenOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/b1":
			if b429.CompareAndSwap(false, true) {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "slow down", http.StatusTooManyRequests)
				return
			}
			fmt.Fprint(w, `<html><head><title>b1</title></head><body><a href="/b2">b2</a></body></html>`)
		default:
			fmt.Fprint(w, `<html><head><title>b</title></head><body>b</body></html>`)
		}
	}))
	hostB := b.Listener.Addr().String() // the purged host's address, host:port
	a := listenOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gone := "http://" + r.Host + "/a1"
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			fmt.Fprintf(w, `<html><head><title>root</title><link rel="canonical" href="%[1]s">`+
				`<script type="application/ld+json">{"@type":"Thing","name":"root","url":"%[1]s","sameAs":["http://%[2]s/b1","http://keep.test/"],`+
				`"description":"write to jane@%[3]s or see %[1]s"}</script></head>`+
				`<body><a href="/a1">a1</a> <a href="/a2">a2</a> <a href="http://%[2]s/b1">b1</a> <a rel="nofollow" href="http://%[2]s/b3">b3</a></body></html>`,
				gone, hostB, "127.0.0.2")
		case "/a1":
			fmt.Fprint(w, `<html><head><title>a1</title></head><body>a1 <a href="/">home</a></body></html>`)
		default:
			fmt.Fprintf(w, `<html><head><title>a2</title><link rel="canonical" href="http://%s/b1"></head><body><a rel="nofollow" href="/a1">a1</a></body></html>`, hostB)
		}
	}))
	site := a.URL
	gone := site + "/a1"
	spec := filepath.Join(t.TempDir(), "site.yaml")
	body := fmt.Sprintf("version: 1\nseeds: [%s/]\nscope: any\nextract:\n  thing: {jsonld: Thing}\n", site)
	if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(0, append(append([]string{"run", "--json", "--quiet", "--allow-net", "127.0.0.0/8"}, runFlags...), spec)...)
	var sum struct {
		Crawl   string `json:"crawl"`
		Fetched int64  `json:"fetched"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Fetched != 5 {
		t.Fatalf("the crawl: %v, fetched %d, want 5 (/, /a1, /a2, b1, b2)\n%s", err, sum.Fetched, out)
	}
	run(0, append(append([]string{"index"}, adminFlags...), sum.Crawl)...)

	needles := []string{gone, "127.0.0.2", hostB, base64.RawURLEncoding.EncodeToString([]byte("127.0.0.2")),
		base64.RawURLEncoding.EncodeToString([]byte(hostB))}
	if n := searchStores(t, raw, needles, nil); n == 0 {
		t.Fatal("before the purge no store names the page or the host: the search reads nothing")
	}
	if !strings.Contains(string(rowsJoined(raw.Rows(t))), "h#"+hostB) {
		t.Fatal("before the purge the crawl has no notes of the purged host (h#" + hostB + "): the site's 429 did not reach them")
	}
	purge := func(args ...string) string {
		return run(0, append(append(append([]string{"purge"}, adminFlags...), args...), "--json", "--reason", "erasure request 43")...)
	}
	purge("--url", gone)
	rep := purge("--host", "127.0.0.2")
	for _, want := range []string{`"hostNotes":`, `"canonicals":`, `"dataValues":`} {
		if !strings.Contains(rep, want) {
			t.Errorf("the host purge's report has no %s: %s", want, rep)
		}
	}
	searchStores(t, raw, needles, t.Errorf)
}

// searchStores searches every row, object and file of raw for the needles, and returns how many
// hits there are in all; with fail set, it reports each hit that docs/erasure.md does not list
// as kept.
func searchStores(t testing.TB, raw Raw, needles []string, fail func(format string, args ...any)) int {
	t.Helper()
	hits := 0
	holds := func(b []byte) string {
		for _, n := range needles {
			if bytes.Contains(b, []byte(n)) {
				return n
			}
		}
		return ""
	}
	for k, v := range raw.Rows(t) {
		n := holds([]byte(k + " " + v))
		if n == "" {
			continue
		}
		hits++
		if fail != nil && k != crawlstate.OptOutKey.String() {
			fail("after the purges, row %s names %s: %s", k, n, excerpt([]byte(v), n))
		}
	}
	for k, b := range raw.Objects(t) {
		n := holds(b)
		if n == "" {
			continue
		}
		hits++
		switch {
		case fail == nil, strings.HasPrefix(k, "audit/purge/"), strings.HasPrefix(k, "seeds/"), strings.HasPrefix(k, "crawls/") && !strings.HasSuffix(k, "/spec.json"):
		case strings.HasSuffix(k, ".warc.gz"):
			for _, why := range warcHits(b, needles) {
				fail("after the purges, WARC file %s: %s", k, why)
			}
		default:
			fail("after the purges, object %s names %s: %s", k, n, excerpt(b, n))
		}
	}
	if raw.Files != nil {
		for name, b := range raw.Files(t) {
			// A file holds the opt-out list's tombstones: look for what only an item or a
			// message holds, a URL as a JSON value, and the host's spellings in names.
			for _, n := range []string{`"` + needles[0] + `"`, needles[3], needles[4], `/` + needles[2] + `/`} {
				if bytes.Contains(b, []byte(n)) {
					hits++
					if fail != nil {
						fail("after the purges, the file %s holds %s: %s", name, n, excerpt(b, n))
					}
				}
			}
		}
	}
	return hits
}

// warcHits returns where a WARC file names a needle outside the bodies of the pages it keeps: in a
// record's headers, a request record, or the record of a page whose URL names one. Each record is
// its own gzip member.
func warcHits(file []byte, needles []string) []string {
	var out []string
	br := bufio.NewReader(bytes.NewReader(file))
	zr, err := gzip.NewReader(br)
	for i := 0; err == nil; i, err = i+1, zr.Reset(br) {
		zr.Multistream(false)
		rec, rerr := io.ReadAll(zr)
		if rerr != nil {
			return append(out, fmt.Sprintf("record %d: %v", i, rerr))
		}
		head, content, _ := bytes.Cut(rec, []byte("\r\n\r\n"))
		typ, target := warcHeader(head, "WARC-Type"), warcHeader(head, "WARC-Target-URI")
		_, httpBody, _ := bytes.Cut(content, []byte("\r\n\r\n"))
		for _, n := range needles {
			if why := warcHit(head, content, httpBody, typ, target, n); why != "" {
				out = append(out, fmt.Sprintf("record %d: %s", i, why))
				break
			}
		}
	}
	if !errors.Is(err, io.EOF) {
		out = append(out, err.Error())
	}
	return out
}

// warcHit says why a WARC record that names n is not a kept page's body ("": it is).
func warcHit(head, content, httpBody []byte, typ, target, n string) string {
	switch {
	case strings.Contains(target, n):
		return fmt.Sprintf("the %s record of %s is left", typ, target)
	case bytes.Contains(head, []byte(n)):
		return fmt.Sprintf("the %s record of %s names %s in its headers", typ, target, n)
	case typ != "response" && bytes.Contains(content, []byte(n)):
		return fmt.Sprintf("the %s record of %s names %s", typ, target, n)
	case typ == "response" && bytes.Contains(content[:len(content)-len(httpBody)], []byte(n)):
		return fmt.Sprintf("the HTTP headers of %s name %s", target, n)
	}
	return ""
}

// warcHeader is the value of a WARC record's header named name ("" if it has none).
func warcHeader(head []byte, name string) string {
	for line := range strings.SplitSeq(string(head), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// rowsJoined is every row's key and text, one after another.
func rowsJoined(rows map[string]string) []byte {
	var b bytes.Buffer
	for k, v := range rows {
		b.WriteString(k + " " + v + "\n")
	}
	return b.Bytes()
}

// listenOn serves h on a free port of the loopback address ip, closed when t ends.
func listenOn(t testing.TB, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}
