package records

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// columnsFile is the stack's copy of the record's columns, which its Glue table is built from
// (infra is a module of its own: neither module can import the other).
const columnsFile = "../../../infra/crawlstack/record-columns.json"

type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func loadColumns(t *testing.T) (columns, partitionKeys []column) {
	t.Helper()
	raw, err := os.ReadFile(columnsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Comment       string   `json:"_comment"`
		Columns       []column `json:"columns"`
		PartitionKeys []column `json:"partitionKeys"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", columnsFile, err)
	}
	return f.Columns, f.PartitionKeys
}

// hiveType is the Hive type that the OpenX JSON SerDe reads a field of Go type t as.
func hiveType(t reflect.Type) (string, error) {
	switch {
	case t == reflect.TypeFor[time.Time]():
		return "string", nil // RFC 3339 text
	case t == reflect.TypeFor[map[string]any]():
		return "string", nil // any JSON: the SerDe gives its text
	}
	switch t.Kind() {
	case reflect.Pointer:
		return hiveType(t.Elem()) // null when nil
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "boolean", nil
	case reflect.Int, reflect.Int32:
		return "int", nil
	case reflect.Int64:
		return "bigint", nil
	case reflect.Slice:
		e, err := hiveType(t.Elem())
		return "array<" + e + ">", err
	case reflect.Map:
		k, err := hiveType(t.Key())
		if err != nil {
			return "", err
		}
		v, err := hiveType(t.Elem())
		return "map<" + k + "," + v + ">", err
	case reflect.Struct:
		var fields []string
		for _, c := range fieldsOf(t) {
			ft, err := hiveType(c.typ)
			if err != nil {
				return "", err
			}
			fields = append(fields, strings.ToLower(c.name)+":"+ft)
		}
		return "struct<" + strings.Join(fields, ",") + ">", nil
	}
	return "", fmt.Errorf("no Hive type for %s", t)
}

type jsonField struct {
	name string
	typ  reflect.Type
}

// fieldsOf are the JSON fields of struct type t, in order.
func fieldsOf(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type})
	}
	return out
}

// TestTheGlueColumnsAreTheRecordsFields holds the Record type against the columns the stack's
// Glue table has: each JSON field of a record is a column of its Hive type (the crawl a partition
// key instead), and no column names a field that records lack.
func TestTheGlueColumnsAreTheRecordsFields(t *testing.T) {
	columns, partitionKeys := loadColumns(t)
	var want []column
	for _, f := range fieldsOf(reflect.TypeFor[Record]()) {
		if f.name == "crawl" {
			continue
		}
		typ, err := hiveType(f.typ)
		if err != nil {
			t.Fatalf("field %s: %v", f.name, err)
		}
		want = append(want, column{strings.ToLower(f.name), typ})
	}
	if !slices.Equal(columns, want) {
		t.Errorf("%s has the columns\n  %v\nthe Record type gives\n  %v\nchange the file with the type", columnsFile, columns, want)
	}
	if want := []column{{"crawl", "string"}, {"dt", "string"}}; !slices.Equal(partitionKeys, want) {
		t.Errorf("partition keys %v, want %v (Dir and Key name them)", partitionKeys, want)
	}
}

// TestARecordsJSONKeysAreTheColumns encodes a record with every field set and checks its keys,
// as the SerDe matches them (case-insensitively), against the columns: nothing a record holds
// is out of the table, and nothing the table has is missing from a record.
func TestARecordsJSONKeysAreTheColumns(t *testing.T) {
	columns, _ := loadColumns(t)
	r := Record{Crawl: "c", URL: "http://a.test/", FinalURL: "http://a.test/", Depth: 1, Status: 200,
		ContentType: "text/html", Title: "t", Canonical: "http://a.test/", Charset: "utf-8", NoIndex: true,
		NoFollow: true, OutLinks: []string{"http://a.test/b"}, FetchedAt: time.Now(),
		WARC: message.Ref{Key: "pages/c/x.warc.gz", Offset: 1, Length: 2}, Digest: "sha256:00", ETag: `"v1"`,
		LastModified: "Tue, 01 Dec 2026 10:00:00 GMT", Class: "parse", Error: "e",
		Data: map[string]any{"price": "9.99"}, DataErrors: map[string]string{"x": "y"}, Items: map[string]any{"rows": []any{}}, Sitemap: true,
		NoFollowLinks: []string{"http://a.test/c"}, Unchanged: true, Rendered: true, RenderError: "render/no-browser",
		Text: "words", TextTruncated: true, PDF: &PDFInfo{Author: "a", Pages: 2}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range obj {
		if k != "crawl" {
			keys = append(keys, strings.ToLower(k))
		}
	}
	var names []string
	for _, c := range columns {
		names = append(names, c.Name)
	}
	slices.Sort(keys)
	slices.Sort(names)
	if !slices.Equal(keys, names) {
		t.Errorf("a record's keys %v, the table's columns %v", keys, names)
	}
	var warc map[string]json.RawMessage
	if err := json.Unmarshal(obj["warc"], &warc); err != nil || len(warc) != 3 {
		t.Errorf("warc = %s, want the 3 fields of the struct column", obj["warc"])
	}
}
