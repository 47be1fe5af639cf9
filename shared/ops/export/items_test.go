package export_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/crawlstack/crawlstack/shared/local/fileblob/fileblobtest"
	"github.com/crawlstack/crawlstack/shared/ops/export"
	"github.com/crawlstack/crawlstack/shared/ops/export/exporttest"
)

// Records with items, written out by hand: a listing with two items (one with a field the other
// lacks, text CSV must quote), a page stored twice by a redelivered message, a page without items.
const (
	listing = `{"crawl":"c1","url":"http://a.test/list","finalUrl":"http://a.test/list","depth":0,"status":200,"outLinks":[],"fetchedAt":"2026-12-01T10:00:00Z","warc":{"key":"k","offset":0,"length":1},` +
		`"items":{"products":[{"name":"Kettle, \"steel\"","price":"24.90"},{"name":"Lid","price":null,"tags":["a","b"]}],"links":[{"href":"http://a.test/x"}]}}`
	plain = `{"crawl":"c1","url":"http://a.test/plain","finalUrl":"http://a.test/plain","depth":1,"status":200,"outLinks":[],"fetchedAt":"2026-12-01T10:00:01Z","warc":{"key":"k","offset":1,"length":1}}`
)

func exportItems(t *testing.T, f export.Format, rule string) []map[string]any {
	t.Helper()
	s := fileblobtest.Filled(t, map[string]string{
		"records/crawl=c1/dt=2026-12-01/a.jsonl": listing + "\n" + plain + "\n",
		"records/crawl=c1/dt=2026-12-02/b.jsonl": listing + "\n", // a redelivery
	})
	path := filepath.Join(t.TempDir(), "items."+string(f))
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := export.WriteItems(context.Background(), s, "c1", rule, f, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	rows := exporttest.Read(t, string(f), path)
	if res.Records != len(rows) || res.Files != 2 {
		t.Errorf("result %+v, want %d rows of 2 files", res, len(rows))
	}
	return rows
}

// An items export has one row per item of the rule, each page's once, read back by another parser.
func TestItemsExportReadsBackWithAnIndependentParser(t *testing.T) {
	csvRows := exportItems(t, export.CSV, "products")
	wantCSV := []map[string]any{
		{"crawl": "c1", "url": "http://a.test/list", "item": "products", "index": "1", "data.name": `Kettle, "steel"`, "data.price": "24.90", "data.tags": ""},
		{"crawl": "c1", "url": "http://a.test/list", "item": "products", "index": "2", "data.name": "Lid", "data.price": "", "data.tags": `["a","b"]`},
	}
	if !reflect.DeepEqual(csvRows, wantCSV) {
		t.Errorf("csv rows\n got %v\nwant %v", csvRows, wantCSV)
	}
	jsonRows := exportItems(t, export.JSONL, "products")
	wantJSON := []map[string]any{
		{"crawl": "c1", "url": "http://a.test/list", "item": "products", "index": float64(1), "data": map[string]any{"name": `Kettle, "steel"`, "price": "24.90"}},
		{"crawl": "c1", "url": "http://a.test/list", "item": "products", "index": float64(2), "data": map[string]any{"name": "Lid", "price": nil, "tags": []any{"a", "b"}}},
	}
	if !reflect.DeepEqual(jsonRows, wantJSON) {
		t.Errorf("json rows\n got %v\nwant %v", jsonRows, wantJSON)
	}
	if rows := exportItems(t, export.JSONL, "nosuchrule"); len(rows) != 0 {
		t.Errorf("a rule with no items gave rows: %v", rows)
	}
}

// The records of the sitemaps and robots.txt a crawl read are no pages: an export leaves them out
// unless Meta keeps them.
func TestMetaRecordsAreLeftOutByDefault(t *testing.T) {
	robots := `{"crawl":"c1","url":"http://a.test/robots.txt","finalUrl":"http://a.test/robots.txt","depth":0,"status":200,"outLinks":["http://a.test/sitemap.xml"],"fetchedAt":"2026-12-01T10:00:00Z","warc":{"key":"k","offset":2,"length":1},"sitemap":true}`
	s := fileblobtest.Filled(t, map[string]string{"records/crawl=c1/dt=2026-12-01/a.jsonl": plain + "\n" + robots + "\n"})
	for _, meta := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := export.Write(context.Background(), s, "c1", export.JSONL, out, nil, export.Options{Meta: meta}); err != nil {
			t.Fatal(err)
		}
		out.Close()
		var urls []string
		for _, r := range exporttest.Read(t, "jsonl", path) {
			urls = append(urls, r["url"].(string))
		}
		want := []string{"http://a.test/plain"}
		if meta {
			want = append(want, "http://a.test/robots.txt")
		}
		if !reflect.DeepEqual(urls, want) {
			t.Errorf("meta %v: exported %v, want %v", meta, urls, want)
		}
	}
}
