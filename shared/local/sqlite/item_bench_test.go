package sqlite

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

const benchDoc = `{"depth":2,"enqueued":true,"root":"https://example.com/","state":"fetched","updatedAt":1796000000000,"url":"https://example.com/p/1"}`

// fetchedDoc is a fetched URL's item: its page attribute is JSON in a string, full of escapes.
const fetchedDoc = `{"depth":2,"enqueued":true,"owner":"m-1","page":"{\"key\":\"pages/c/2026/11/29/x.warc.gz\",\"offset\":1234,\"length\":5678,\"status\":200,\"contentType\":\"text/html; charset=utf-8\",\"finalUrl\":\"https://example.com/p/1\"}","root":"https://example.com/","state":"fetched","updatedAt":1796000000000,"url":"https://example.com/p/1"}`

// decodeItemGeneric is decoding with encoding/json alone: decodeItem's fast path must agree.
func decodeItemGeneric(doc string) (table.Item, error) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	it := table.Item{}
	for k, v := range raw {
		if n, ok := v.(json.Number); ok {
			i, err := n.Int64()
			if err != nil {
				return nil, err
			}
			v = i
		}
		it[k] = v
	}
	return it, nil
}

func TestDecodeItemMatchesEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		benchDoc, `{}`, ` { "a" : "b" , "n" : -0 , "t":false } `, `{"a":"x\"y","b":"\u00e9\/"}`,
		`{"a":1.5}`, `{"a":1e3}`, `{"a":99999999999999999999}`, `{"a":null}`, `{"a":[1]}`, `{"a":{"b":1}}`,
		`{"a":1,"a":2}`, "{\"a\":\"\xff\"}", `{"a":"é"}`, `{"a":1`, `[1]`, `"s"`, ``, `{"a":tru}`, `{"a":01}`,
		`{"a":-9223372036854775808,"b":9223372036854775807}`, fetchedDoc,
		`{"a":"\\"}`, `{"a":"x\\\"y\\\\"}`, `{"a":"\ud83d\ude00 \t"}`, `{"a":"\ud800"}`, "{\"a\":\"\\n\xff\"}",
		`{"a":"\"","b":"c"}`, `{"a\"b":1}`,
	} {
		got, gotErr := decodeItem(doc)
		want, wantErr := decodeItemGeneric(doc)
		if (gotErr != nil) != (wantErr != nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("decodeItem(%q) = %#v, %v; encoding/json says %#v, %v", doc, got, gotErr, want, wantErr)
		}
	}
}

func BenchmarkDecodeItem(b *testing.B) {
	for _, bc := range []struct{ name, doc string }{{"queued", benchDoc}, {"fetched", fetchedDoc}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeItem(bc.doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
