package purge_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
	"github.com/crawlstack/crawlstack/shared/demo/demosite"
	"github.com/crawlstack/crawlstack/shared/ops/purge"
)

// runCrawl runs `crawl run` with args on state and returns the crawl's id.
func runCrawl(t *testing.T, state string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append([]string{"run", "--json", "--quiet", "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--state", state}, args...)
	if code := cli.Main(context.Background(), args, &out, &errOut); code != 0 {
		t.Fatalf("crawl %v: exit %d\n%s", args, code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var sum struct{ Crawl string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	return sum.Crawl
}

// storedRef is a place a store names a WARC record by: a file, an offset and a length, and the
// record it must hold there.
type storedRef struct {
	where, key, url string
	offset, length  int64
	types           []string // the WARC-Types the record may have
}

// TestPurgeKeepsEveryOtherRecordReadable crawls a site, recrawls it (every page unchanged: a
// revisit record each, which refers to the first crawl's response), and purges a page whose record
// another page's follows in its file, in both crawls. Then warcio.js, a reader of its own, reads
// every WARC file left (digests, and every revisit resolved against the response it refers to),
// and the record at every place a store names: each URL's stored page, each revisit's reference to
// the payload it reuses, and each record's "warc" in the records files. Each place holds exactly
// one record, of its URL. Before, the revisit records of a rewritten file kept their old offsets.
func TestPurgeKeepsEveryOtherRecordReadable(t *testing.T) {
	site := demosite.New(12, 3, 500)
	site.Validators = true // a recrawl gets 304s, and stores revisit records
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	state := t.TempDir()
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte(srv.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := runCrawl(t, state, seeds)
	second := runCrawl(t, state, "--fresh", seeds)
	be := open(t, state)
	ctx := context.Background()
	url := followedInBoth(t, besideIndexes(t, be, first), besideIndexes(t, be, second))
	rep, err := (&purge.Purger{T: be.Table, B: be.Blobs}).Purge(ctx, purge.Request{Target: urlEntry(t, url), Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cr := range rep.Crawls {
		// The recrawl's pages move twice: their revisit records, and the payloads they reuse.
		if cr.PagesMoved == 0 || len(cr.Unresolved) > 0 {
			t.Errorf("the purge moved %d pages of crawl %s, and left %q unresolved; want pages moved and none unresolved",
				cr.PagesMoved, cr.Crawl, cr.Unresolved)
		}
	}
	dir := t.TempDir()
	var files []string
	for _, crawl := range []string{first, second} {
		files = append(files, writeObjects(t, be, dir, "pages/"+crawl+"/", ".warc.gz")...)
	}
	sum := warctest.Check(t, files...)
	if sum.Revisits == 0 || sum.RevisitsResolved != sum.Revisits {
		t.Errorf("warcio.js read %+v: want revisit records, each resolved against the response it refers to", sum)
	}
	var refs []storedRef
	for _, crawl := range []string{first, second} {
		refs = append(refs, tableRefs(t, be, crawl)...)
		refs = append(refs, recordsRefs(t, be, crawl)...)
	}
	checkRefs(t, be, dir, refs, url)
}

// followedInBoth returns a URL whose record another page's follows in its file in both crawls
// (from the indexes beside their files), so that purging it moves a revisit record of the recrawl
// and a response record that another revisit reuses.
func followedInBoth(t *testing.T, first, second map[string][]byte) string {
	t.Helper()
	followed := func(indexes map[string][]byte) map[string]bool {
		out := map[string]bool{}
		for _, ix := range indexes {
			type line struct {
				url    string
				offset int64
			}
			var lines []line
			for l := range bytes.Lines(ix) {
				parts := strings.SplitN(string(l), " ", 3)
				var f struct{ URL, Offset string }
				if len(parts) != 3 || json.Unmarshal([]byte(parts[2]), &f) != nil {
					t.Fatalf("index line %q: not CDXJ", l)
				}
				o, err := strconv.ParseInt(f.Offset, 10, 64)
				if err != nil {
					t.Fatalf("index line %q: %v", l, err)
				}
				lines = append(lines, line{f.URL, o})
			}
			slices.SortFunc(lines, func(a, b line) int { return cmp.Compare(a.offset, b.offset) })
			for i := 0; i+1 < len(lines); i++ {
				out[lines[i].url] = true
			}
		}
		return out
	}
	a, b := followed(first), followed(second)
	var both []string
	for u := range a {
		if b[u] {
			both = append(both, u)
		}
	}
	if len(both) == 0 {
		t.Fatal("no page has another page after it in its WARC file in both crawls: the test needs one")
	}
	slices.Sort(both)
	return both[0]
}

// besideIndexes returns the indexes beside the crawl's WARC files, by key.
func besideIndexes(t *testing.T, be *cli.Backend, crawl string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	keys, err := be.Blobs.List(context.Background(), "pages/"+crawl+"/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasSuffix(k, ".cdxj") {
			if out[k], err = be.Blobs.Get(context.Background(), k); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// writeObjects writes the objects under prefix into dir, at their keys, and returns the paths of
// those whose key ends in suffix.
func writeObjects(t *testing.T, be *cli.Backend, dir, prefix, suffix string) []string {
	t.Helper()
	keys, err := be.Blobs.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, k := range keys {
		b, err := be.Blobs.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(k, suffix) {
			paths = append(paths, p)
		}
	}
	return paths
}

// tableRefs are the places the crawl's URL items name: each fetched URL's stored page (a response,
// or a revisit record in a recrawl), and a revisit's reference to the response it reuses.
func tableRefs(t *testing.T, be *cli.Backend, crawl string) []storedRef {
	t.Helper()
	var refs []storedRef
	err := crawlstate.New(be.Table).EachURL(context.Background(), crawl, func(u crawlstate.URL) error {
		p := u.Page
		if p == nil {
			return nil
		}
		refs = append(refs, storedRef{where: "the stored page of " + u.URL + " in " + crawl, key: p.WARCKey, url: p.FinalURL,
			offset: p.Offset, length: p.Length, types: []string{"response", "revisit"}})
		if un := p.Unchanged; un != nil && un.Payload.Key != "" {
			refs = append(refs, storedRef{where: "the payload the revisit of " + u.URL + " in " + crawl + " reuses",
				key: un.Payload.Key, url: un.URI, offset: un.Payload.Offset, length: un.Payload.Length, types: []string{"response"}})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// recordsRefs are the places the crawl's records files name ("warc"), read as JSON.
func recordsRefs(t *testing.T, be *cli.Backend, crawl string) []storedRef {
	t.Helper()
	ctx := context.Background()
	keys, err := be.Blobs.List(ctx, "records/crawl="+crawl+"/")
	if err != nil {
		t.Fatal(err)
	}
	var refs []storedRef
	for _, k := range keys {
		b, err := be.Blobs.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(b) {
			var r struct {
				FinalURL string `json:"finalUrl"`
				WARC     struct {
					Key            string
					Offset, Length int64
				} `json:"warc"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			refs = append(refs, storedRef{where: "the record of " + r.FinalURL + " in " + k, key: r.WARC.Key, url: r.FinalURL,
				offset: r.WARC.Offset, length: r.WARC.Length, types: []string{"response", "revisit"}})
		}
	}
	return refs
}

// checkRefs has warcio.js read the bytes at each place, as a file of its own: each holds exactly
// one record, of its URL and of a type it may have, whose block digest is right. No place names
// the purged URL.
func checkRefs(t *testing.T, be *cli.Backend, dir string, refs []storedRef, purged string) {
	t.Helper()
	if len(refs) == 0 {
		t.Fatal("no store names a WARC record: the check reads nothing")
	}
	byFile := map[string]storedRef{}
	var files []string
	for i, r := range refs {
		if r.url == purged {
			t.Errorf("%s names the purged URL", r.where)
		}
		b, err := be.Blobs.Get(context.Background(), r.key)
		if err != nil {
			t.Errorf("%s: %s: %v", r.where, r.key, err)
			continue
		}
		if r.offset < 0 || r.length <= 0 || r.offset+r.length > int64(len(b)) {
			t.Errorf("%s: %d+%d is outside %s's %d bytes", r.where, r.offset, r.length, r.key, len(b))
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("ref-%d.warc.gz", i))
		if err := os.WriteFile(p, b[r.offset:r.offset+r.length], 0o644); err != nil {
			t.Fatal(err)
		}
		byFile[p] = r
		files = append(files, p)
	}
	if len(files) == 0 {
		return
	}
	for p, recs := range warctest.Read(t, files...) {
		r := byFile[p]
		if len(recs) != 1 || !slices.Contains(r.types, recs[0].Type) || recs[0].URI != r.url || !recs[0].BlockDigestOK {
			t.Errorf("%s: %s at %d+%d holds %+v, want one %s record of %s", r.where, r.key, r.offset, r.length, recs,
				strings.Join(r.types, " or "), r.url)
		}
	}
}
