// Package records is the crawl's structured results: the Record that parse writes for each page,
// one JSON line each, and where the records files are. They lie under a partitioned layout,
// records/crawl=<crawl>/dt=<yyyy-mm-dd>/<batch>.jsonl, which the stack's Glue table reads with
// partition projection, so that Athena queries a crawl at once with no Glue crawler
// (docs/results.md). Read gives a crawl's records back, each page once, for `crawl export`.
package records

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// Prefix is where the records of every crawl lie.
const Prefix = layout.Records

// ContentType is the media type of a records file.
const ContentType = "application/x-ndjson"

// Record is the structured result for one page, one JSON line in a records file. The Glue table
// of the stack has a column for each of its fields but Crawl, which is the table's partition
// key: infra/crawlstack/testdata/record-columns.json is the copy of the columns that the tests of
// both modules hold against it.
type Record struct {
	Crawl       string      `json:"crawl"`
	URL         string      `json:"url"`
	FinalURL    string      `json:"finalUrl"`
	Depth       int         `json:"depth"`
	Status      int         `json:"status"`
	ContentType string      `json:"contentType,omitempty"`
	Title       string      `json:"title,omitempty"`
	Canonical   string      `json:"canonical,omitempty"`
	Charset     string      `json:"charset,omitempty"`
	NoIndex     bool        `json:"noindex,omitempty"`
	NoFollow    bool        `json:"nofollow,omitempty"`
	OutLinks    []string    `json:"outLinks"`
	FetchedAt   time.Time   `json:"fetchedAt"`
	WARC        message.Ref `json:"warc"`
	// Digest is the SHA-256 of the page's body as stored, its WARC record's WARC-Payload-Digest
	// ("sha256:" and hex): a page whose digest is the same in two crawls did not change.
	Digest string `json:"digest,omitempty"`
	// ETag and LastModified are the response's validators, as the server sent them.
	ETag         string         `json:"etag,omitempty"`
	LastModified string         `json:"lastModified,omitempty"`
	Class        errclass.Class `json:"class,omitempty"`
	Error        string         `json:"error,omitempty"`
	// Data holds the fields of the crawl's spec, by name: null where a field found nothing. It is
	// absent for a crawl without fields and for a page that is not parsed (class set).
	Data map[string]any `json:"data,omitempty"`
	// DataErrors says, by field, why a field is null when it is not for finding nothing: a
	// registered extractor that failed, or a value over the size bounds.
	DataErrors map[string]string `json:"dataErrors,omitempty"`
	// Items holds, by the spec's item rule, the list of items the page yielded (each an object of
	// the rule's fields), as a listing page of 50 products yields 50: absent when no rule found
	// any. crawl export --items RULE writes them one a row; Athena unnests them (docs/results.md).
	Items map[string]any `json:"items,omitempty"`
	// Sitemap marks the record of a sitemap (or of a robots.txt read for its Sitemap: lines):
	// OutLinks are the URLs and sitemaps it lists.
	Sitemap bool `json:"sitemap,omitempty"`
	// NoFollowLinks are the OutLinks that the page marks rel="nofollow", which are not followed:
	// a recrawl that reuses the record follows the others (shared/crawl/recrawl).
	NoFollowLinks []string `json:"nofollowLinks,omitempty"`
	// Unchanged marks the record of a page that a recrawl found unchanged since the previous crawl:
	// WARC points at a revisit record, and the title, links and data are the previous crawl's
	// record's (or, where that could not be reused, parsed from the payload the revisit refers to).
	Unchanged bool `json:"unchanged,omitempty"`
	// Rendered marks the record of a page whose scripts ran in a headless browser before it was
	// parsed (the crawl spec's render section): the title, links and data are the rendered DOM's,
	// stored as a WARC conversion record beside the response that WARC points at.
	Rendered bool `json:"rendered,omitempty"`
	// RenderError says why a page that was to render was not (such as "render/no-browser"):
	// the record is the static HTML's.
	RenderError string `json:"renderError,omitempty"`
	// Text is the text of a page of a kind the crawl parses besides HTML (its spec's parse key):
	// a PDF's, or a text/plain body, decoded to UTF-8, cut at 64 KiB (doctype.MaxTextBytes).
	Text string `json:"text,omitempty"`
	// TextTruncated says that Text was cut: at its cap, or for a PDF past the pages read.
	TextTruncated bool `json:"textTruncated,omitempty"`
	// PDF holds a PDF's metadata (its title is Title, its links OutLinks); nil for any other page.
	PDF *PDFInfo `json:"pdf,omitempty"`
}

// PDFInfo is the metadata of a PDF: its document information entries, dates in RFC 3339 (or as
// written where they are not PDF dates), and its page count.
type PDFInfo struct {
	Author   string `json:"author,omitempty"`
	Subject  string `json:"subject,omitempty"`
	Keywords string `json:"keywords,omitempty"`
	Creator  string `json:"creator,omitempty"`
	Producer string `json:"producer,omitempty"`
	Created  string `json:"created,omitempty"`
	Modified string `json:"modified,omitempty"`
	Pages    int    `json:"pages"`
}

// Dir is the prefix of crawl's records: records/crawl=<crawl>/.
func Dir(crawl string) string { return layout.RecordsDir(crawl) }

// DateLayout is the layout of the dt partition's values, in UTC.
const DateLayout = "2006-01-02"

// Key is the key of the records file named batch that was written at t:
// records/crawl=<crawl>/dt=<yyyy-mm-dd>/<batch>.jsonl.
func Key(crawl string, t time.Time, batch string) string {
	return Dir(crawl) + "dt=" + t.UTC().Format(DateLayout) + "/" + batch + ".jsonl"
}

// Store is the object store that holds the records (blob.Store).
type Store interface {
	List(ctx context.Context, prefix string) ([]string, error)
	Get(ctx context.Context, key string) ([]byte, error)
}

// Progress is told how many of the crawl's records files have been read.
type Progress func(done, total int)

// Read calls fn with each of crawl's records, each page once: a redelivered parse message may
// have stored a page's record twice (with the same url and fetchedAt), and only the first read is
// passed on. Files are read in key order, so by day. It returns the files read; a file that cannot
// be read or holds a line that is not a record stops it with an error that names the file and
// line. A crawl with no records files is an error too, since its id is likely mistyped.
func Read(ctx context.Context, s Store, crawl string, progress Progress, fn func(Record) error) (files int, err error) {
	f, err := NewFollower(s, crawl)
	if err != nil {
		return 0, err
	}
	n, err := f.readNew(ctx, progress, fn)
	if err == nil && n == 0 {
		return 0, fmt.Errorf("crawl %s has no records under %s", crawl, Dir(crawl))
	}
	return n, err
}

// Follower reads a crawl's records files as they land, for a reader that wants the pages as they
// come: each Read passes on the records of the files that the ones before did not read, each page
// once across them all. A records file is written whole (an S3 PUT, or a rename), so a file
// listed is complete.
type Follower struct {
	s     Store
	crawl string
	done  map[string]bool // the files read
	seen  map[string]bool // the records passed on
}

// NewFollower returns a Follower of crawl's records in s.
func NewFollower(s Store, crawl string) (*Follower, error) {
	if crawl == "" || strings.ContainsAny(crawl, "/#=") {
		return nil, fmt.Errorf("crawl id %q: want a crawl's id, as crawl status lists them", crawl)
	}
	return &Follower{s: s, crawl: crawl, done: map[string]bool{}, seen: map[string]bool{}}, nil
}

// Read calls fn with the records of the files not read before, in key order, and returns how
// many files it read (0: none landed since).
func (f *Follower) Read(ctx context.Context, fn func(Record) error) (int, error) {
	return f.readNew(ctx, nil, fn)
}

func (f *Follower) readNew(ctx context.Context, progress Progress, fn func(Record) error) (int, error) {
	dir := Dir(f.crawl)
	keys, err := f.s.List(ctx, dir)
	if err != nil {
		return 0, fmt.Errorf("list the records of %s: %w", f.crawl, err)
	}
	var names []string
	for _, k := range keys {
		if strings.HasSuffix(k, ".jsonl") && !f.done[k] {
			names = append(names, k)
		}
	}
	for i, k := range names {
		b, err := f.s.Get(ctx, k)
		if err != nil {
			return i, fmt.Errorf("read %s: %w", k, err)
		}
		if err := readFile(k, b, f.seen, fn); err != nil {
			return i, err
		}
		f.done[k] = true
		if progress != nil {
			progress(i+1, len(names))
		}
	}
	return len(names), nil
}

// Lines calls fn with each record of one records file, key, whose content is b, in file order: a
// record stored twice (a redelivered parse message) is passed once. A line that is not a record
// stops it with an error that names the file and line.
func Lines(key string, b []byte, fn func(Record) error) error {
	return readFile(key, b, map[string]bool{}, fn)
}

// maxLine bounds one record's line: a page's 1,000 links of 2 KiB and its data fit.
const maxLine = 16 << 20

func readFile(key string, b []byte, seen map[string]bool, fn func(Record) error) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxLine)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		// Numbers in data keep their digits (json.Number), not float64's.
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var r Record
		if err := dec.Decode(&r); err != nil {
			return fmt.Errorf("%s:%d: not a record: %w", key, line, err)
		}
		if seen[r.URL] {
			continue
		}
		seen[r.URL] = true
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	return nil
}
