package export_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/local/fileblob"
	"github.com/crawlstack/crawlstack/shared/local/fileblob/fileblobtest"
	"github.com/crawlstack/crawlstack/shared/ops/export"
	"github.com/crawlstack/crawlstack/shared/ops/export/exporttest"
)

// The records as parse stores them, written out by hand: text that CSV must quote (commas,
// quotes, a line break, a leading '='), non-ASCII text, data of every kind (text, a list, an
// object, a number, null), a field only some pages have, a page that did not parse, and a page
// stored twice by a redelivered message.
const (
	home = `{"crawl":"c1","url":"http://a.test/","finalUrl":"http://a.test/","depth":0,"status":200,"contentType":"text/html","title":"Home, \"sweet\"\nhome","outLinks":["http://a.test/p","http://a.test/q"],"fetchedAt":"2026-12-01T10:00:00.5Z","warc":{"key":"pages/c1/2026/12/01/x.warc.gz","offset":0,"length":900},"digest":"sha256:ab12","etag":"\"v1\"","lastModified":"Tue, 01 Dec 2026 10:00:00 GMT","rendered":true,"data":{"price":"9.99","tags":["a","b"],"product":{"@type":"Product","name":"Ünï — “x”"},"rating":42.50,"missing":null}}`
	page = `{"crawl":"c1","url":"http://a.test/p","finalUrl":"http://a.test/p?x=1","depth":1,"status":200,"title":"=HYPERLINK(\"http://evil.test\")","noindex":true,"outLinks":[],"fetchedAt":"2026-12-01T10:00:01Z","warc":{"key":"pages/c1/2026/12/01/x.warc.gz","offset":900,"length":700},"data":{"price":null,"tags":[],"product":null,"rating":null,"missing":null,"only":"here"},"dataErrors":{"missing":"over 64 KiB"}}`
	bad  = `{"crawl":"c1","url":"http://a.test/q","finalUrl":"http://a.test/q","depth":1,"status":200,"outLinks":[],"fetchedAt":"2026-12-02T00:00:00Z","warc":{"key":"pages/c1/2026/12/02/y.warc.gz","offset":0,"length":500},"class":"parse","error":"bad charset","renderError":"render/no-browser"}`
)

func store(t *testing.T) *fileblob.Store {
	return fileblobtest.Filled(t, map[string]string{
		"records/crawl=c1/dt=2026-12-01/a.jsonl": home + "\n" + page + "\n",
		"records/crawl=c1/dt=2026-12-02/b.jsonl": page + "\n" + bad + "\n", // page again: a redelivery
		"records/crawl=c2/dt=2026-12-01/c.jsonl": `{"crawl":"c2","url":"http://other.test/"}` + "\n",
	})
}

func export1(t *testing.T, f export.Format) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out."+string(f))
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := export.Write(context.Background(), store(t), "c1", f, out, nil, export.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if res != (export.Result{Files: 2, Records: 3}) {
		t.Errorf("result %+v, want 2 files and 3 records", res)
	}
	return path
}

func TestCSVReadsBackWithAnIndependentParser(t *testing.T) {
	rows := exporttest.Read(t, "csv", export1(t, export.CSV))
	empty := map[string]any{"data.missing": "", "data.only": "", "data.price": "", "data.product": "", "data.rating": "", "data.tags": ""}
	row := func(cells map[string]any) map[string]any {
		m := maps.Clone(empty)
		maps.Copy(m, map[string]any{"crawl": "c1", "title": "", "contentType": "", "canonical": "", "charset": "", "noindex": "false",
			"nofollow": "false", "class": "", "error": "", "sitemap": "false", "dataErrors": "", "digest": "", "etag": "", "lastModified": "", "unchanged": "false",
			"rendered": "false", "renderError": ""})
		maps.Copy(m, cells)
		return m
	}
	want := []map[string]any{
		row(map[string]any{"url": "http://a.test/", "finalUrl": "http://a.test/", "status": "200", "depth": "0",
			"contentType": "text/html", "title": "Home, \"sweet\"\nhome", "fetchedAt": "2026-12-01T10:00:00.5Z",
			"outLinks": `["http://a.test/p","http://a.test/q"]`, "warcKey": "pages/c1/2026/12/01/x.warc.gz",
			"warcOffset": "0", "warcLength": "900", "digest": "sha256:ab12", "etag": `"v1"`,
			"lastModified": "Tue, 01 Dec 2026 10:00:00 GMT", "data.price": "9.99", "data.tags": `["a","b"]`,
			"data.product": `{"@type":"Product","name":"Ünï — “x”"}`, "data.rating": "42.50", "rendered": "true"}),
		row(map[string]any{"url": "http://a.test/p", "finalUrl": "http://a.test/p?x=1", "status": "200", "depth": "1",
			"title": `=HYPERLINK("http://evil.test")`, "noindex": "true", "fetchedAt": "2026-12-01T10:00:01Z", "outLinks": "[]",
			"warcKey": "pages/c1/2026/12/01/x.warc.gz", "warcOffset": "900", "warcLength": "700", "data.tags": "[]",
			"data.only": "here", "dataErrors": `{"missing":"over 64 KiB"}`}),
		row(map[string]any{"url": "http://a.test/q", "finalUrl": "http://a.test/q", "status": "200", "depth": "1",
			"fetchedAt": "2026-12-02T00:00:00Z", "outLinks": "[]", "warcKey": "pages/c1/2026/12/02/y.warc.gz",
			"warcOffset": "0", "warcLength": "500", "class": "parse", "error": "bad charset", "renderError": "render/no-browser"}),
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %v", len(rows), len(want), rows)
	}
	for i := range want {
		if !reflect.DeepEqual(rows[i], want[i]) {
			for k := range want[i] {
				if rows[i][k] != want[i][k] {
					t.Errorf("row %d, %s = %q, want %q", i, k, rows[i][k], want[i][k])
				}
			}
			for k := range rows[i] {
				if _, ok := want[i][k]; !ok {
					t.Errorf("row %d has a column %s that was not expected", i, k)
				}
			}
		}
	}
}

func TestJSONLReadsBackWithAnIndependentParser(t *testing.T) {
	rows := exporttest.Read(t, "jsonl", export1(t, export.JSONL))
	var urls []string
	for _, r := range rows {
		urls = append(urls, r["url"].(string))
	}
	if want := []string{"http://a.test/", "http://a.test/p", "http://a.test/q"}; !slices.Equal(urls, want) {
		t.Fatalf("urls %v, want %v (each page once)", urls, want)
	}
	data := rows[0]["data"].(map[string]any)
	if data["price"] != "9.99" || data["rating"] != 42.5 || data["missing"] != nil ||
		!reflect.DeepEqual(data["tags"], []any{"a", "b"}) || data["product"].(map[string]any)["name"] != "Ünï — “x”" {
		t.Errorf("data of the home page = %v", data)
	}
	if _, ok := data["missing"]; !ok {
		t.Errorf("data of the home page lost its null field: %v", data)
	}
	if rows[0]["title"] != "Home, \"sweet\"\nhome" || rows[0]["fetchedAt"] != "2026-12-01T10:00:00.5Z" {
		t.Errorf("home page: title %q, fetchedAt %q", rows[0]["title"], rows[0]["fetchedAt"])
	}
	if rows[1]["noindex"] != true || rows[2]["class"] != "parse" || rows[1]["dataErrors"].(map[string]any)["missing"] != "over 64 KiB" {
		t.Errorf("rows %v", rows[1:])
	}
	if warc := rows[1]["warc"].(map[string]any); warc["offset"] != 900.0 || warc["length"] != 700.0 {
		t.Errorf("warc of /p = %v", warc)
	}
}

func TestFormats(t *testing.T) {
	for in, want := range map[string]export.Format{"jsonl": export.JSONL, "CSV": export.CSV} {
		if got, err := export.ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := export.ParseFormat("parquet"); err == nil || !strings.Contains(err.Error(), "want jsonl or csv") {
		t.Errorf("ParseFormat(parquet) err = %v", err)
	}
	for in, want := range map[string]export.Format{"out.csv": export.CSV, "OUT.CSV": export.CSV, "out.jsonl": export.JSONL, "out": export.JSONL} {
		if got := export.FormatOf(in); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAnExportOfNothingIsAnError: a crawl without records (a mistyped id) writes nothing.
func TestAnExportOfNothingIsAnError(t *testing.T) {
	for _, f := range []export.Format{export.JSONL, export.CSV} {
		var out strings.Builder
		_, err := export.Write(context.Background(), store(t), "c3", f, &out, nil, export.Options{})
		if err == nil || !strings.Contains(err.Error(), "no records") || out.Len() != 0 {
			t.Errorf("%s: err = %v, wrote %q; want an error that says so and nothing written", f, err, out.String())
		}
	}
}
