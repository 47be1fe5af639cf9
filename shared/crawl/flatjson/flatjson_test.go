package flatjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A queued URL's item, and a fetched one's, whose page attribute is JSON in a string, full of
// escapes: the documents the crawl state is made of.
const (
	queuedDoc  = `{"depth":2,"enqueued":true,"root":"https://example.com/","state":"fetched","updatedAt":1796000000000,"url":"https://example.com/p/1"}`
	fetchedDoc = `{"depth":2,"enqueued":true,"owner":"m-1","page":"{\"key\":\"pages/c/2026/11/29/x.warc.gz\",\"offset\":1234,\"length\":5678,\"status\":200,\"contentType\":\"text/html; charset=utf-8\",\"finalUrl\":\"https://example.com/p/1\"}","root":"https://example.com/","state":"fetched","updatedAt":1796000000000,"url":"https://example.com/p/1"}`
)

// generic reads doc with encoding/json alone, integers as int64, or says it is not a flat object
// of strings, integers and bools: the oracle.
func generic(doc string) (map[string]any, bool) {
	if !json.Valid([]byte(doc)) {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil || raw == nil {
		return nil, false
	}
	for k, v := range raw {
		switch v := v.(type) {
		case json.Number:
			n, err := v.Int64()
			if err != nil || strings.ContainsAny(string(v), ".eE") {
				return nil, false
			}
			raw[k] = n
		case string, bool:
		default:
			return nil, false
		}
	}
	return raw, true
}

// agrees fails t unless Object reads doc exactly as encoding/json does: whatever Object reads is
// valid JSON and has the same attributes and values.
func agrees(t *testing.T, doc string) (read bool) {
	t.Helper()
	got, ok := Object(doc)
	if !ok {
		return false
	}
	want, flat := generic(doc)
	if !flat {
		t.Errorf("Object(%q) read %#v; encoding/json does not read it as a flat object", doc, got)
	} else if !reflect.DeepEqual(got, want) {
		t.Errorf("Object(%q) = %#v; encoding/json says %#v", doc, got, want)
	}
	return true
}

var readable = []string{
	queuedDoc, fetchedDoc, `{}`, ` { } `, ` { "a" : "b" , "n" : -0 , "t":false } `, "{\n\t\"a\":\r\n1}",
	`{"a":"x\"y","b":"\u00e9\/"}`, `{"a":1,"a":2}`, `{"a":"é"}`, `{"a":"\\"}`, `{"a":"x\\\"y\\\\"}`,
	`{"a":"\ud83d\ude00 \t"}`, `{"a":"\ud800"}`, `{"a":"\"","b":"c"}`, `{"a\"b":1}`, `{"a":"\u0000\b\f\n\r\t"}`,
	`{"a":-9223372036854775808,"b":9223372036854775807}`, `{"a":0,"b":-1,"c":10}`, "{\"a\":\"\x7f\"}",
	`{"a":"\uABCD\uabcd"}`, `{"":""}`, `{"a":"x\/y\b\f\n\r\t\\\"z"}`, `{"a":"\\u0041"}`, `{"\t":"é\n"}`,
	"{\"a\":\"\\n\xff\"}", // escapes and invalid UTF-8: encoding/json replaces the byte, and so does Object
}

var unreadable = []string{
	// Valid JSON, but not a flat object of strings, integers and bools.
	`{"a":1.5}`, `{"a":1e3}`, `{"a":1E3}`, `{"a":-0.0}`, `{"a":99999999999999999999}`, `{"a":null}`,
	`{"a":[1]}`, `{"a":{"b":1}}`, `[1]`, `"s"`, `1`, `null`,
	// Invalid JSON.
	``, ` `, `{`, `{"a":1`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{'a':1}`, `{"a":tru}`,
	`{"a":truex}`, `{"a":01}`, `{"a":-01}`, `{"a":-}`, `{"a":+1}`, `{"a":0x1}`, `{"a":1}}`,
	`{"a":1} x`, `{"a":1}{}`, `{"a":"x}`, "{\"a\":\"\x01\"}", "{\"a\":\"\n\"}", `{"a":"\x41"}`,
	`{"a":"\'"}`, `{"a":"\u12"}`, `{"a":"\u12G4"}`, `{"a":"\U0001F600"}`, `{"a":"\`, `{"a":"\u`,
	`{"a":1 "b":2}`, `{"a":true,"b"}`,
	// Valid to encoding/json, which replaces invalid UTF-8 in a string with no escape: left to it.
	"{\"a\":\"\xff\"}", "{\"\xff\":1}",
}

func TestObjectReadsFlatObjectsAsEncodingJSONDoes(t *testing.T) {
	for _, doc := range readable {
		if !agrees(t, doc) {
			t.Errorf("Object(%q) did not read a flat object", doc)
		}
	}
}

func TestObjectLeavesEveryOtherDocumentToEncodingJSON(t *testing.T) {
	for _, doc := range unreadable {
		if agrees(t, doc) {
			t.Errorf("Object(%q) read a document that is not a valid flat object", doc)
		}
	}
}

// FuzzObject holds Object to encoding/json on any document: what it reads, encoding/json reads
// alike (go test -fuzz FuzzObject ./shared/crawl/flatjson).
func FuzzObject(f *testing.F) {
	for _, doc := range append(readable, unreadable...) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) { agrees(t, doc) })
}

func BenchmarkObject(b *testing.B) {
	for _, bc := range []struct{ name, doc string }{{"queued", queuedDoc}, {"fetched", fetchedDoc}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := Object(bc.doc); !ok {
					b.Fatal("not read")
				}
			}
		})
	}
}
