package crawlstate

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/flatjson"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// talliedByJSON is readTallied by encoding/json alone, into stored: the oracle.
func talliedByJSON(raw string) (tallied, error) {
	var st stored
	err := json.Unmarshal([]byte(raw), &st)
	return tallied{S: st.S, C: st.C, D: st.D, K: st.K, B: st.B, O: st.O, P: st.P, M: st.M}, err
}

// jsonOutcome is o in the JSON form that outcomes were written in before outcomecode.go's.
func jsonOutcome(crawl string, o Outcome, token string) (string, error) {
	st, err := storedOf(crawl, o, token)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(st)
	return string(b), err
}

// A tally reads every outcome of the JSON form of before (outcomecode.go) as encoding/json reads
// its state, class, detail and page's place into stored: those it was written as (read flat, but
// for a revisit's), and any other document.
func TestReadTalliedReadsTheJSONFormAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	page := &Page{WARCKey: "pages/c1/2026-12-02/b1.warc.gz", Offset: 10, Length: 2000, FinalURL: "http://a.test/x?q=\"1\"",
		Status: 200, ContentType: "text/html; charset=utf-8", FetchedAt: at, Msg: "pages/c1/2026-12-02/b1.warc.gz#3",
		ETag: `W/"abc"`, Digest: "sha1:ABC"}
	revisit := *page
	revisit.Unchanged = &message.Unchanged{}
	var flat []string
	for _, o := range []Outcome{
		{URL: "http://a.test/1", State: Fetched, Page: page},
		{URL: "http://a.test/2", State: Failed, Cause: errclass.Errorf(errclass.Timeout, "GET: \"slow\"\n\tafter 30s\u2028")},
		{URL: "http://a.test/3", State: Skipped, Cause: errclass.Errorf(errclass.Robots, "disallowed by robots.txt: /private/")},
		{URL: "http://a.test/4", State: Stopped, Cause: errors.New("no class")},
	} {
		raw, err := jsonOutcome("c1", o, writerTag("M"))
		if err != nil {
			t.Fatal(err)
		}
		flat = append(flat, raw)
	}
	nested, err := jsonOutcome("c1", Outcome{URL: "http://a.test/5", State: Fetched, Page: &revisit}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range flat {
		if !flatjson.Members(raw, func(string, flatjson.Value) {}) {
			t.Errorf("outcome %s is not read flat", raw)
		}
	}
	others := []string{
		nested, `{"S":"f"}`, `{"s":"f","S":"x"}`, `{"ſ":"x"}`, `{"s":"x","C":"http"}`, `{"s":"x","c":"http","D":"why"}`,
		`{"s":1}`, `{"s":"x","c":true}`, `{"s":"x","d":5}`, `{"s":"f","c":null}`, `{"s":"f","s":"x"}`, `{"\u0073":"t"}`,
		`{"s":"x","c":"http","d":"a\"b\\c\u00e9\/"}`, `{"s":"f","x":1.5}`, `{"s":"f","p":0,"un":{}}`, `{}`,
		`{"s":`, `{"s":"f"} x`, `{"s":"f","b":"d/x","o":12,"p":3}`, `{"s":"f","K":"k"}`,
		`{"s":"f","\u212a":"kelvin"}`, `{"s":"f","o":"12"}`, `{"s":"f","p":null,"m":"n"}`, `{"s":"f","o":1e3}`,
		`{"s":"f","p":99999999999999999999}`, `{"s":"f","M":"x","m":"y"}`,
	}
	for _, raw := range append(flat, others...) {
		got, err := readTallied(raw, "")
		want, werr := talliedByJSON(raw)
		if (err != nil) != (werr != nil) || err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("readTallied(%s) = %+v, %v; encoding/json reads %+v, %v", raw, got, err, want, werr)
		}
	}
}
