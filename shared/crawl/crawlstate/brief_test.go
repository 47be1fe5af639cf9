package crawlstate

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/flatjson"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// briefByJSON is briefParts by encoding/json alone: the oracle.
func briefByJSON(raw string) (s, c, d string, err error) {
	var st stored
	err = json.Unmarshal([]byte(raw), &st)
	return st.S, string(st.C), st.D, err
}

// A tally reads every outcome's state, class and detail as encoding/json reads them into stored:
// those encodeOutcome writes (read flat, but for a revisit's), and any other document.
func TestBriefPartsReadAsEncodingJSON(t *testing.T) {
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
		raw, err := encodeOutcome("c1", o, writerTag("M"))
		if err != nil {
			t.Fatal(err)
		}
		flat = append(flat, raw)
	}
	nested, err := encodeOutcome("c1", Outcome{URL: "http://a.test/5", State: Fetched, Page: &revisit}, "")
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
		`{"s":`, `[]`, `"f"`, `null`, ``, `{"s":"f"} x`,
	}
	for _, raw := range append(flat, others...) {
		s, c, d, err := briefParts(raw)
		ws, wc, wd, werr := briefByJSON(raw)
		if (err != nil) != (werr != nil) || err == nil && (s != ws || c != wc || d != wd) {
			t.Errorf("briefParts(%s) = %q, %q, %q, %v; encoding/json reads %q, %q, %q, %v", raw, s, c, d, err, ws, wc, wd, werr)
		}
	}
}
