package purge

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/optout"
)

// TestARewrittenRecordKeepsItsNumbersAndLosesEveryMentionOfThePurgedURL: another page's record
// that links to a purged URL is written again without the URL in outLinks, nofollowLinks,
// canonical and data, and its other data keep their bytes: an integer above 2^53, a decimal with
// a trailing zero. A record that names nothing purged is kept byte for byte.
func TestARewrittenRecordKeepsItsNumbersAndLosesEveryMentionOfThePurgedURL(t *testing.T) {
	const gone = "http://a.test/p1"
	purged := `{"crawl":"c","url":"http://a.test/p1","finalUrl":"http://a.test/p1","depth":1,"status":200,"outLinks":[],"fetchedAt":"2026-12-01T10:00:00Z","warc":{"key":"","offset":0,"length":0}}` + "\n"
	other := `{"crawl":"c","url":"http://a.test/","finalUrl":"http://a.test/","depth":0,"status":200,"canonical":"http://a.test/p1",` +
		`"outLinks":["http://a.test/p1","http://a.test/p10"],"fetchedAt":"2026-12-01T10:00:00Z","warc":{"key":"","offset":0,"length":0},` +
		`"data":{"big":9007199254740993,"price":1.50,"link":"http://a.test/p1","list":["http://a.test/p1","keep http://a.test/p10"],` +
		`"nested":{"n":-9007199254740995,"u":"see http://a.test/p1 now","e":12e3}},"nofollowLinks":["http://a.test/p1"],` +
		`"items":{"rows":[{"link":"http://a.test/p1","n":9007199254740993},{"link":"http://a.test/p10"}]}}` + "\n"
	untouched := `{"crawl":"c", "url":"http://a.test/p2","finalUrl":"http://a.test/p2","depth":1,"status":200,"outLinks":["http://a.test/p10"],` +
		`"fetchedAt":"2026-12-01T10:00:00Z","warc":{"key":"","offset":0,"length":0},"data":{"big":9007199254740993}}` + "\n"
	p := &Purger{}
	var cr CrawlReport
	out, left, changed, err := p.filterRecords([]byte(purged+other+untouched), matcher{optout.Entry{Kind: optout.URL, Value: gone}}, nil, &cr)
	if err != nil {
		t.Fatal(err)
	}
	if left != 2 || !changed {
		t.Fatalf("left %d, changed %v; want 2 records left, changed", left, changed)
	}
	lines := strings.SplitAfter(string(out), "\n")
	if len(lines) != 3 || lines[2] != "" {
		t.Fatalf("got %d lines:\n%s", len(lines), out)
	}
	if lines[1] != untouched {
		t.Errorf("the record that names nothing purged changed:\n got %s\nwant %s", lines[1], untouched)
	}
	got := lines[0]
	for _, want := range []string{`"big":9007199254740993`, `"price":1.50`, `"n":-9007199254740995`, `"e":12e3`,
		`"outLinks":["http://a.test/p10"]`, `"list":["keep http://a.test/p10"]`, `"link":null`, `"u":null`,
		`"rows":[{"link":null,"n":9007199254740993},{"link":"http://a.test/p10"}]`} {
		if !strings.Contains(got, want) {
			t.Errorf("the rewritten record lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(strings.ReplaceAll(got, gone+"0", ""), gone) {
		t.Errorf("the rewritten record still names %s:\n%s", gone, got)
	}
	for _, field := range []string{`"canonical"`, `"nofollowLinks"`} {
		if strings.Contains(got, field) {
			t.Errorf("the rewritten record keeps %s:\n%s", field, got)
		}
	}
	var check map[string]any
	if err := json.NewDecoder(bytes.NewReader([]byte(got))).Decode(&check); err != nil {
		t.Errorf("the rewritten record is not JSON: %v", err)
	}
	if cr.RecordLines != 1 || cr.OutLinks != 1 || cr.NoFollowLinks != 1 || cr.Canonicals != 1 || cr.DataValues != 4 {
		t.Errorf("report %+v; want 1 record, 1 link, 1 nofollow link, 1 canonical, 4 data values (an item's too)", cr)
	}
}

// TestHostNamesInText: a host purge erases text that names the host or a host under it, and not
// text that names another host that merely contains its name.
func TestHostNamesInText(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"example.com", true},
		{"write to jane@example.com.", true},
		{"https://www.example.com/x", true},
		{"EXAMPLE.COM", true},
		{"notexample.com", false},
		{"example.community", false},
		{"example.com-mirror.net", false},
		{"127.0.0.25", false},
		{"", false},
	} {
		m := matcher{optout.Entry{Kind: optout.Host, Value: "example.com"}}
		if c.text == "127.0.0.25" {
			m = matcher{optout.Entry{Kind: optout.Host, Value: "127.0.0.2"}}
		}
		if got := m.names(c.text); got != c.want {
			t.Errorf("names(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}
