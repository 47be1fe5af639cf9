package e2etest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
)

// checkArchive has warcio.js read the crawl's WARC files (with their indexes beside them), checks
// that every line of the crawl's index and every WARC offset stored in a row or a records file
// reads back the response record of its URL (with gzip and the bytes as stored), and returns the
// number of response records warcio.js read.
func checkArchive(t testing.TB, objects map[string][]byte, crawl string, rows map[string]string) int {
	t.Helper()
	files := writePages(t, t.TempDir(), objects, crawl)
	if len(files) == 0 {
		t.Fatalf("crawl %s has no WARC file left", crawl)
	}
	sum := warctest.Check(t, files...)
	if sum.Resolved != sum.IndexLines || sum.IndexLines != sum.Responses {
		t.Errorf("warcio.js: %+v; want every response indexed and every index line resolved", sum)
	}
	refs := indexRefs(t, objects, crawl)
	refs = append(refs, recordRefs(objects, crawl)...)
	table := tableRefs(rows, crawl)
	if len(table) == 0 {
		t.Error("no row holds a WARC offset: the check of the table's offsets reads nothing")
	}
	for _, r := range append(refs, table...) {
		checkRef(t, objects, r)
	}
	return sum.Responses
}

// warcRef is where a stored reference says a URL's response record is: a WARC file's key, and
// the record's offset and size in it.
type warcRef struct {
	key, url     string
	offset, size int64
}

// writePages writes the objects under the crawl's pages/ into dir, at their keys, and returns the
// paths of the WARC files among them.
func writePages(t testing.TB, dir string, objects map[string][]byte, crawl string) (files []string) {
	t.Helper()
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
	return files
}

// indexRefs are the references of the lines of the crawl's index (CDXJ).
func indexRefs(t testing.TB, objects map[string][]byte, crawl string) []warcRef {
	t.Helper()
	var refs []warcRef
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
		refs = append(refs, warcRef{"pages/" + crawl + "/" + f.Filename, f.URL, o, l})
	}
	return refs
}

// recordRefs are the references of the crawl's records files: "warc": {"key", "offset",
// "length"}, with finalUrl.
func recordRefs(objects map[string][]byte, crawl string) []warcRef {
	var refs []warcRef
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
				refs = append(refs, warcRef{r.WARC.Key, r.FinalURL, r.WARC.Offset, r.WARC.Length})
			}
		}
	}
	return refs
}

// tableRefs are the references the rows hold: an outcome in the compact form (compactRef), or
// {"k", "o", "l"}, a JSON string in an attribute, "b" for a file named as fetch names them,
// pages/<crawl>/<b>.warc.gz, as crawlstate shortened it.
func tableRefs(rows map[string]string, crawl string) []warcRef {
	var refs []warcRef
	for _, v := range rows {
		for _, s := range jsonStrings(v) {
			if r, ok := compactRef(s, v, crawl); ok {
				refs = append(refs, r)
				continue
			}
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
				refs = append(refs, warcRef{p.K, p.U, p.O, p.L})
			}
		}
	}
	return refs
}

// compactRef reads where a fetched page is stored from s, an outcome in a group's item in the
// compact form (docs/state.md, "A group's item, byte by byte"): "f", then "|"-separated fields
// of a tag letter and a value ("~1" a "|", "~0" a "~"), its file named in full (k), as
// <day>/<batch> (b), or by the id of the row's attribute f<id> that holds that (f); offset (o)
// and length (l) in base 36, and the final URL (u) when it is not the URL.
func compactRef(s, row, crawl string) (warcRef, bool) {
	if !strings.HasPrefix(s, "f|") {
		return warcRef{}, false
	}
	var r warcRef
	for _, f := range strings.Split(s, "|")[1:] {
		if f == "" {
			return warcRef{}, false
		}
		v := strings.NewReplacer("~1", "|", "~0", "~").Replace(f[1:])
		switch f[0] {
		case 'k':
			r.key = v
		case 'b':
			r.key = "pages/" + crawl + "/" + v + ".warc.gz"
		case 'f':
			var attrs map[string]any
			_ = json.Unmarshal([]byte(row), &attrs)
			if b, ok := attrs["f"+v].(string); ok {
				r.key = "pages/" + crawl + "/" + b + ".warc.gz"
			}
		case 'o':
			r.offset, _ = strconv.ParseInt(v, 36, 64)
		case 'l':
			r.size, _ = strconv.ParseInt(v, 36, 64)
		case 'u':
			r.url = v
		}
	}
	return r, strings.HasSuffix(r.key, ".warc.gz")
}

// checkRef checks that r reads back, from the object as stored, one gzip member holding the
// response record of its URL.
func checkRef(t testing.TB, objects map[string][]byte, r warcRef) {
	t.Helper()
	b := objects[r.key]
	if r.offset < 0 || r.size <= 0 || r.offset+r.size > int64(len(b)) {
		t.Errorf("offset %d+%d of %s (%s): outside the file's %d bytes", r.offset, r.size, r.key, r.url, len(b))
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(b[r.offset : r.offset+r.size]))
	if err != nil {
		t.Errorf("offset %d of %s: not a gzip member: %v", r.offset, r.key, err)
		return
	}
	zr.Multistream(false)
	rec, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(rec, []byte("WARC-Type: response")) ||
		(r.url != "" && !bytes.Contains(rec, []byte("WARC-Target-URI: "+r.url+"\r\n"))) {
		t.Errorf("offset %d+%d of %s does not read back the response record of %q (%v)", r.offset, r.size, r.key, r.url, err)
	}
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
