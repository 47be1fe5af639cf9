package message

import (
	"strconv"
	"time"
)

// Parse asks parse to read stored responses: the pages one fetch batch stored in one WARC file
// (File and Pages), or one page (the fields of a single page and WARC, as a fetcher sends again
// for a page whose first message may be lost).
type Parse struct {
	Header
	URL         string    `json:"url,omitempty"`
	FinalURL    string    `json:"finalUrl,omitempty"`
	Root        string    `json:"root,omitempty"`
	Depth       int       `json:"depth,omitempty"`
	Status      int       `json:"status,omitempty"`
	ContentType string    `json:"contentType,omitempty"`
	FetchedAt   time.Time `json:"fetchedAt,omitzero"`
	WARC        Ref       `json:"warc,omitzero"`
	Sitemap     bool      `json:"sitemap,omitempty"`
	// Unchanged is set when the page is a revisit record (see Page.Unchanged).
	Unchanged *Unchanged `json:"unchanged,omitempty"`
	// Rendered and RenderError: see Page.
	Rendered    *Ref   `json:"rendered,omitempty"`
	RenderError string `json:"renderError,omitempty"`
	// File is the WARC file's key, and Pages the pages in it; a file whose pages take more than one
	// message is sent in parts, numbered from 0.
	File  string `json:"file,omitempty"`
	Part  int    `json:"part,omitempty"`
	Pages []Page `json:"pages,omitempty"`
	// Robots are the robots.txt rules the fetcher applied to its pages' hosts, those it could carry
	// (RobotsRules): parse drops the links they disallow before they are admitted. A host whose
	// rules are not here has nothing refused early; the fetcher checks every URL it fetches.
	Robots []RobotsRules `json:"robots,omitempty"`
}

// RobotsRules are a robots.txt as the fetcher applied it (robots.Held) to each of Hosts: the
// hosts whose robots.txt is the same file, matched for the same product token, share one entry.
type RobotsRules struct {
	Hosts []string `json:"hosts"` // scheme://host:port
	Agent string   `json:"agent"` // the product token matched
	Body  string   `json:"body"`
}

// Bounds on the robots.txt rules a Parse message carries: a robots.txt longer than MaxRobotsBody
// is not carried, and the rules of a message take at most MaxRobotsBytes (the fetcher's parts of
// pages leave that room below MaxBytes, and a part holds no more pages than its hosts' rules fit
// in it), so a hostile robots.txt cannot break a message's limit. 64 KiB carries the rules of
// about 150 hosts of their own robots.txt, what a fetch batch of lone URLs of many hosts brings
// (a part more would cost a parse message, its records PUT and its mark; the rules cost at most
// one or two 64 KiB requests more, which SQS bills as one each).
const (
	MaxRobotsBody  = 16 << 10
	MaxRobotsBytes = 64 << 10
)

// Page is one stored response in a Parse message's file.
type Page struct {
	URL         string    `json:"url"`
	FinalURL    string    `json:"finalUrl"`
	Root        string    `json:"root"`
	Depth       int       `json:"depth"`
	Status      int       `json:"status"`
	ContentType string    `json:"contentType,omitempty"`
	FetchedAt   time.Time `json:"fetchedAt"`
	Offset      int64     `json:"offset"`
	Length      int64     `json:"length"`
	// Sitemap: the page is a sitemap (see Links.Sitemap).
	Sitemap bool `json:"sitemap,omitempty"`
	// Unchanged is set when the page is a revisit record: a recrawl found it unchanged.
	Unchanged *Unchanged `json:"unchanged,omitempty"`
	// Rendered, set by the render step (shared/handler/renderer), is where the page's rendered
	// DOM is: a WARC conversion record that refers to the page's response record. Parse reads
	// the DOM for the page's links, title and fields.
	Rendered *Ref `json:"rendered,omitempty"`
	// RenderError, set by the render step, says why a page that was to render was not (such as
	// "render/no-browser"): parse reads its static HTML, and its record says so.
	RenderError string `json:"renderError,omitempty"`
}

// Unchanged says that a recrawl found a page unchanged since an earlier crawl (a 304 to its
// conditional request, or the same payload digest), and stored a revisit record for it.
type Unchanged struct {
	// Profile is the revisit record's WARC profile (warcfile.ProfileNotModified or
	// warcfile.ProfileIdenticalPayload).
	Profile string `json:"profile"`
	// Payload is where the payload is stored: the response record of the crawl that last fetched
	// the page whole, whose WARC-Target-URI and WARC-Date are URI and Date, and whose payload
	// digest is Digest.
	Payload Ref       `json:"payload"`
	URI     string    `json:"uri"`
	Date    time.Time `json:"date"`
	Digest  string    `json:"digest"`
	// Crawl and Msg name the previous crawl and its parse message that holds the page's record,
	// whose title, links and data the page's new record reuses.
	Crawl string `json:"crawl"`
	Msg   string `json:"msg,omitempty"`
}

// Ref is where the page is stored.
func (p Page) Ref(file string) Ref { return Ref{Key: file, Offset: p.Offset, Length: p.Length} }

// MaxPages bounds the pages of one Parse message.
const MaxPages = 500

// PageList returns the message's pages and the file they are in, whichever form it has.
func (m *Parse) PageList() (file string, pages []Page) {
	if len(m.Pages) > 0 {
		return m.File, m.Pages
	}
	return m.WARC.Key, []Page{{URL: m.URL, FinalURL: m.FinalURL, Root: m.Root, Depth: m.Depth, Status: m.Status,
		ContentType: m.ContentType, FetchedAt: m.FetchedAt, Offset: m.WARC.Offset, Length: m.WARC.Length, Sitemap: m.Sitemap,
		Unchanged: m.Unchanged, Rendered: m.Rendered, RenderError: m.RenderError}}
}

// Name names the message's work, the same for every delivery of it: its file and part, or for a
// single page its file and offset. Parse marks a message done under this name.
func (m *Parse) Name() string {
	if len(m.Pages) > 0 {
		return PartName(m.File, m.Part)
	}
	return PageName(m.WARC.Key, m.WARC.Offset)
}

// PageName is the Name of a one-page message for the page at offset in file.
func PageName(file string, offset int64) string { return file + "@" + strconv.FormatInt(offset, 10) }

// PartName is the Name of part part of file's Parse messages.
func PartName(file string, part int) string { return file + "#" + strconv.Itoa(part) }
