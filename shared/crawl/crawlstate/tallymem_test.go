package crawlstate

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// crawlShape is the shape of a crawl's items as a real crawl writes them, for a tally to read
// without a table: pages of URLs in groups of ten (nine fetched, one skipped or failed in turn),
// four groups to a WARC file whose parse message is marked (but the last file's), naming 0.7 Links
// messages a page, marked admitted in items of 77 (a wide crawl's schedule batch) but those of the
// last file parsed.
type crawlShape struct {
	crawl string
	urls  int
}

const (
	shapeGroup       = 10
	shapeFileGroups  = 4
	shapeLinksPerURL = 0.7
	shapeAdmitBatch  = 77
)

func (c crawlShape) groups() int { return (c.urls + shapeGroup - 1) / shapeGroup }
func (c crawlShape) files() int  { return (c.groups() + shapeFileGroups - 1) / shapeFileGroups }

func (c crawlShape) urlOf(i int) string {
	return fmt.Sprintf("http://host-%d.test/section/page-%d.html", i%997, i)
}
func (c crawlShape) file(f int) string {
	return fmt.Sprintf("pages/%s/2026-12-05/batch-%07d.warc.gz", c.crawl, f)
}
func (c crawlShape) group(g int) string { return fmt.Sprintf("grp-%07d", g) }
func (c crawlShape) linksName(n int) string {
	return strings.TrimRight(fmt.Sprintf("L%015d", n), " ")
}

// linksOfFile are the names of the Links messages of file f's parse message.
func (c crawlShape) linksOfFile(f int) (first, n int) {
	per := int(shapeLinksPerURL * shapeGroup * shapeFileGroups)
	return f * per, per
}

// items calls fn with every item of the shape whose sort key starts with kind (parsedKind,
// groupKind or urlKind): one kind's, or all (""), the parse marks last (a tally then holds every
// page until the end: the most it holds).
func (c crawlShape) items(kind string, fn func(table.Key, table.Item) error) error {
	if kind == "" {
		for _, k := range []string{groupKind, urlKind, parsedKind} {
			if err := c.items(k, fn); err != nil {
				return err
			}
		}
		return nil
	}
	at := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	expires := time.Now().Add(DefaultRetention).Unix() // a table's TTL deletes items: DynamoDB Local's does
	switch kind {
	case parsedKind:
		total, _ := c.linksOfFile(c.files() - 2) // those of the last file parsed are not yet admitted
		for f := range c.files() {
			first, n := c.linksOfFile(f)
			if f == c.files()-1 {
				continue // the last file's message is not parsed yet
			}
			names := make([]string, n)
			for i := range names {
				names[i] = c.linksName(first + i)
			}
			it := table.Item{"updatedAt": at.UnixMilli(), table.TTLAttr: expires, "records": "records/" + c.crawl + "/x.jsonl",
				"links": strings.Join(names, " ")}
			if err := fn(parsedKey(c.crawl, message.PartName(c.file(f), 0)), it); err != nil {
				return err
			}
		}
		for b := 0; b*shapeAdmitBatch < total; b++ {
			var names []string
			for i := b * shapeAdmitBatch; i < min(total, (b+1)*shapeAdmitBatch); i++ {
				names = append(names, c.linksName(i))
			}
			it := table.Item{"updatedAt": at.UnixMilli(), table.TTLAttr: expires, "links": strings.Join(names, " ")}
			if err := fn(inCrawl(c.crawl, parsedKind+linksAdmittedLetter, fmt.Sprintf("%032x", b)), it); err != nil {
				return err
			}
		}
	case groupKind:
		for g := range c.groups() {
			it := table.Item{"updatedAt": at.UnixMilli(), table.TTLAttr: expires}
			for i := g * shapeGroup; i < min(c.urls, (g+1)*shapeGroup); i++ {
				o, err := encodeOutcome(c.crawl, c.outcome(i, g, at), writerTag("shape"))
				if err != nil {
					return err
				}
				it[outcomeAttr(urlnorm.Key(c.urlOf(i)))] = o
			}
			if err := fn(groupKey(c.crawl, c.group(g)), it); err != nil {
				return err
			}
		}
	case urlKind:
		for i := range c.urls {
			u := c.urlOf(i)
			it := table.Item{attrState: string(Queued), attrURL: u, attrRoot: "http://host.test/", attrDepth: int64(2),
				attrBy: "bVbVbVbVbVbVbVbV", attrGroup: c.group(i / shapeGroup), attrUpdated: at.UnixMilli(), table.TTLAttr: expires}
			if err := fn(URLKey(c.crawl, urlnorm.Key(u)), it); err != nil {
				return err
			}
		}
	}
	return nil
}

// outcome is URL i's, of group g.
func (c crawlShape) outcome(i, g int, at time.Time) Outcome {
	u := c.urlOf(i)
	switch i % shapeGroup {
	case 3:
		return Outcome{URL: u, State: Skipped, Cause: errclass.Errorf(errclass.Robots, "disallowed by robots.txt: /section/")}
	case 7:
		return Outcome{URL: u, State: Failed, Cause: errclass.Errorf(errclass.HTTP5xx, "status 503 after 3 tries")}
	}
	file := c.file(g / shapeFileGroups)
	return Outcome{URL: u, State: Fetched, Page: &Page{WARCKey: file, Offset: int64(i) * 7000, Length: 6800,
		FinalURL: u, Status: 200, ContentType: "text/html; charset=utf-8", FetchedAt: at, Msg: message.PartName(file, 0),
		ETag: `"5f2a-1c9e"`, LastModified: "Thu, 03 Dec 2026 10:00:00 GMT", Digest: "sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"}}
}

// shapeTable is a table of a crawlShape's items, made as they are read: it holds none, so what a
// tally holds is the heap. Every sampleEvery items read it collects and notes the live heap.
//
// A tally reads the crawl's partitions at once and takes their items in any order, and which
// partition an item is in is nothing to it: so the queries of the crawl's partitions share one
// stream of the shape's items, in the order worst for the tally's memory (every parse mark
// last), each query handing on whichever item comes next. The table notes the partitions queried
// and the prefixes asked for, for the test to check that the tally read all of the crawl's
// partitions, each once, and all of their items.
type shapeTable struct {
	table.Table
	shape       crawlShape
	sampleEvery int

	mu      sync.Mutex
	next    func() (table.Key, table.Item, bool) // the stream, pulled
	stop    func()
	err     error           // the stream's
	queried map[string]int  // the partitions queried, and how often
	prefix  map[string]bool // the sort key prefixes asked for
	read    int
	peak    uint64
}

// QueryAfter is Query from the start of a partition (a tally's first read of it, after the saved
// tallies' kind): the shape's items are a stream, not partitions.
func (s *shapeTable) QueryAfter(ctx context.Context, part, prefix, after string, fn func(string, table.Item) error) error {
	if after != "" && after != afterTallyKind {
		return fmt.Errorf("the shape's table reads no partition from after %q", after)
	}
	return s.Query(ctx, part, prefix, fn)
}

func (s *shapeTable) Query(_ context.Context, part, prefix string, fn func(string, table.Item) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queried == nil {
		s.queried, s.prefix = map[string]int{}, map[string]bool{}
		s.next, s.stop = iter.Pull2(func(yield func(table.Key, table.Item) bool) {
			stopped := errors.New("stopped")
			if err := s.shape.items("", func(k table.Key, it table.Item) error {
				if !yield(k, it) {
					return stopped
				}
				return nil
			}); err != nil && !errors.Is(err, stopped) {
				s.err = err
			}
		})
	}
	s.queried[part]++
	s.prefix[prefix] = true
	for {
		key, it, ok := s.next()
		if !ok {
			return s.err
		}
		if !strings.HasPrefix(key.Sort, prefix) {
			continue
		}
		if s.read++; s.read%s.sampleEvery == 0 {
			s.sample()
		}
		if err := fn(key.Sort, it); err != nil {
			return err
		}
	}
}

// checkQueried fails t unless the partitions queried were the crawl's Shards, each once, and
// each for all of its items.
func (s *shapeTable) checkQueried(t *testing.T, crawl string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
	}
	if len(s.queried) != Shards {
		t.Errorf("the tally queried %d partitions, want the crawl's %d", len(s.queried), Shards)
	}
	for n := range Shards {
		if q := s.queried[crawlPart(crawl, n)]; q != 1 {
			t.Errorf("the tally queried partition %s %d times, want once", crawlPart(crawl, n), q)
		}
	}
	if len(s.prefix) != 1 || !s.prefix[""] {
		t.Errorf("the tally queried for sort keys starting with %v, want all of them", s.prefix)
	}
}

func (s *shapeTable) sample() {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.peak = max(s.peak, m.HeapAlloc)
}

func (s *shapeTable) Get(context.Context, table.Key) (table.Item, error) {
	return nil, table.ErrNotFound
}
func (s *shapeTable) GetMany(context.Context, []table.Key) (map[table.Key]table.Item, error) {
	return map[table.Key]table.Item{}, nil
}
func (s *shapeTable) Put(context.Context, table.Key, table.Item, table.Cond) error {
	return errors.New("the shape's table is read only")
}

// The tally's memory does not grow with the crawl's URLs' outcomes: tallying ten times the URL
// items (and their groups) raises its live heap by less than 24 bytes a URL (17 measured, with
// every parse mark read last), where holding each URL's outcome until its item was read took 335.
// What grows is 8-byte hashes: of the Links messages' names (0.7 a page here), of the pages read
// before their parse message's mark, and of the parse marks (one a WARC file).
func TestTallyMemoryDoesNotGrowWithTheURLs(t *testing.T) {
	if testing.Short() {
		t.Skip("tallies 220,000 URLs")
	}
	peak := func(urls int) (uint64, Left, Counters) {
		tb := &shapeTable{shape: crawlShape{crawl: "big", urls: urls}, sampleEvery: 5000}
		tb.sample()
		base := tb.peak
		c, left, err := New(tb).Drained(context.Background(), "big")
		if err != nil {
			t.Fatal(err)
		}
		tb.checkQueried(t, "big")
		tb.sample()
		return tb.peak - min(base, tb.peak), left, c
	}
	small, _, _ := peak(20_000)
	large, left, c := peak(200_000)
	perURL := float64(int64(large)-int64(small)) / 180_000
	t.Logf("live heap during the tally: %.1f MB at 20,000 URLs, %.1f MB at 200,000: %.1f bytes a URL more",
		float64(small)/1e6, float64(large)/1e6, perURL)
	wantFetched := int64(200_000 * 8 / 10)
	lastFile := int64(200_000 % (shapeGroup * shapeFileGroups))
	if lastFile == 0 {
		lastFile = shapeGroup * shapeFileGroups
	}
	if c.Seen != 200_000 || c.Fetched != wantFetched || c.Skipped != 20_000 || c.Failed != 20_000 || left.Queued != 0 ||
		left.Unparsed != lastFile*8/10 || left.Links != int64(shapeLinksPerURL*shapeGroup*shapeFileGroups) {
		t.Errorf("tally %d seen, %d fetched, %d skipped, %d failed, left %+v: want 200000, %d, 20000, 20000, "+
			"none queued, the last file's %d pages unparsed, the 28 links messages of the last parsed left", c.Seen, c.Fetched, c.Skipped, c.Failed,
			left, wantFetched, lastFile*8/10)
	}
	if perURL > 24 {
		t.Errorf("the tally's live heap grew by %.1f bytes a URL from 20,000 to 200,000 URLs, want under 24", perURL)
	}
}
