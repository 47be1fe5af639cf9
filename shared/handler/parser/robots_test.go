package parser_test

import (
	"context"
	"reflect"
	"regexp"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/handler/parser"
)

// robotsLinks links the sample's host's /search twice (once with a query), a page robots.txt
// allows, a /search of another host, and a /search/x that the crawl's exclude pattern refuses.
const robotsLinks = `<title>Home</title><a href="/about">About</a> <a href="/search">S</a> <a href="/search?q=a">Q</a>
<a href="/search">S again</a> <a href="http://example.test:8080/search">other port</a> <a href="/search/x">excluded</a>`

// TestLinksRobotsTxtRefusesAreNotSent: parse drops a link that the robots.txt carried for its host
// disallows and the crawl's scope takes, and counts it once when the message is marked parsed. A
// host whose rules did not come (another port, a robots.txt the fetcher could not read or carry, an
// entry that does not parse) has its links sent as before, and so has a link the scope refuses
// (schedule records that refusal, and a link of another host is out of the page's host scope). The page's record lists every link.
func TestLinksRobotsTxtRefusesAreNotSent(t *testing.T) {
	carried := message.RobotsRules{Hosts: []string{"http://example.test:80"}, Agent: "crawlstack", Body: "User-agent: *\nDisallow: /search\n"}
	all := []string{"http://example.test/about", "http://example.test/search", "http://example.test/search/x",
		"http://example.test/search?q=a", "http://example.test:8080/search"}
	rest := []string{"http://example.test/about", "http://example.test/search/x", "http://example.test:8080/search"}
	cases := []struct {
		name    string
		robots  []message.RobotsRules
		sent    []string
		refused int64
	}{
		{"the host's rules came", []message.RobotsRules{carried}, rest, 2},
		{"no rules came (unreadable, too long, or another host's)", nil, all, 0},
		{"rules of another host only, out of the page's host scope", []message.RobotsRules{{Hosts: []string{"http://example.test:8080"}, Agent: "crawlstack",
			Body: carried.Body}}, all, 0},
		{"an entry that does not parse", []message.RobotsRules{{Hosts: []string{"example.test"}, Agent: "crawlstack", Body: carried.Body}}, all, 0},
		{"an entry without a product token", []message.RobotsRules{{Hosts: carried.Hosts, Body: carried.Body}}, all, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			rules := scope.DefaultRules()
			rules.Exclude = []*regexp.Regexp{regexp.MustCompile(`/search/`)}
			e.with(func(d *parser.Deps) {
				d.Crawls = specCrawls{&crawlspec.Crawl{Rules: rules, UserAgent: "crawlstack/1.0"}}
			})
			rec, m := e.sample()
			m.Robots = c.robots
			rec = e.store(rec, m, warc(t, m.FinalURL, nil, robotsLinks), 0)
			if got := e.handle(rec); len(got) != 0 {
				t.Fatalf("BatchItemFailures = %v", got)
			}
			if got := e.sent(m); !reflect.DeepEqual(got, c.sent) {
				t.Errorf("links sent = %v, want %v", got, c.sent)
			}
			recs := e.records(m.Crawl)
			if len(recs) != 1 || len(recs[0].OutLinks) != 5 {
				t.Errorf("records %+v, want one with its 5 links", recs)
			}
			// Delivered again (a duplicate): nothing sent, nothing counted twice.
			if got := e.handle(rec); len(got) != 0 {
				t.Fatalf("again: BatchItemFailures = %v", got)
			}
			if got := e.sent(m); len(got) != 0 {
				t.Errorf("the duplicate sent %v", got)
			}
			counted, err := e.state.Counters(context.Background(), m.Crawl)
			if err != nil {
				t.Fatal(err)
			}
			if counted.RobotsRefused != c.refused || counted.Seen != 1 {
				t.Errorf("robots refused %d, seen %d; want %d and 1 (the page's own URL)", counted.RobotsRefused, counted.Seen, c.refused)
			}
		})
	}
}
