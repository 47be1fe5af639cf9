// Package sitemap reads what the sitemaps protocol (sitemaps.org) gives a crawler: a sitemap's
// URLs, a sitemap index's sitemaps, each with its lastmod, and the Sitemap: lines of a robots.txt.
// A sitemap may be gzip-compressed (a .xml.gz file served as application/gzip or octet-stream):
// it is decompressed here, up to the protocol's limit.
//
// The protocol's limits bound everything read: at most MaxEntries entries (50,000) and MaxBytes
// (50 MB) uncompressed. A sitemap over them is read up to them and says it was cut (Truncated).
// XML is read with encoding/xml; robots.txt with temoto/robotstxt.
package sitemap

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/temoto/robotstxt"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// The protocol's limits.
const (
	MaxEntries = 50_000
	MaxBytes   = 50 << 20
)

// Entry is one <url> of a sitemap or one <sitemap> of an index.
type Entry struct {
	Loc string
	// LastMod is the entry's lastmod; zero when it has none or it is not a W3C datetime.
	LastMod time.Time
}

// Sitemap is what one sitemap file holds: URLs (a urlset) or sitemaps (a sitemapindex).
type Sitemap struct {
	URLs     []Entry
	Sitemaps []Entry
	// Truncated is set when entries or bytes past the protocol's limits were left out.
	Truncated bool
}

// Parse reads a sitemap, a sitemap index or a text sitemap (one URL per line), gzip-compressed or
// not. A file that is none of these is an error of class Parse.
func Parse(body []byte) (*Sitemap, error) {
	return parse(body, MaxBytes)
}

// parse is Parse with a limit of maxBytes uncompressed.
func parse(body []byte, maxBytes int) (*Sitemap, error) {
	raw, cut, err := decompress(body, maxBytes)
	if err != nil {
		return nil, errclass.Errorf(errclass.Parse, "sitemap: %v", err)
	}
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(raw, []byte("\xEF\xBB\xBF")))
	var s *Sitemap
	if bytes.HasPrefix(trimmed, []byte("<")) {
		s, err = parseXML(raw)
	} else {
		s, err = parseText(trimmed)
	}
	if err != nil {
		return nil, errclass.Errorf(errclass.Parse, "sitemap: %v", err)
	}
	s.Truncated = s.Truncated || cut
	return s, nil
}

// decompress gunzips a gzip body, up to max bytes; cut reports a body over it.
func decompress(body []byte, max int) (out []byte, cut bool, err error) {
	if len(body) < 2 || body[0] != 0x1f || body[1] != 0x8b {
		if len(body) > max {
			return body[:max], true, nil
		}
		return body, false, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("gzip: %w", err)
	}
	out, err = io.ReadAll(io.LimitReader(zr, int64(max)+1))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, false, fmt.Errorf("gzip: %w", err)
	}
	if len(out) > max {
		return out[:max], true, nil
	}
	return out, false, nil
}

// parseXML streams through a urlset or sitemapindex, keeping each <loc> and <lastmod> of its
// <url> or <sitemap> elements. A document cut short (by the byte limit) keeps what came before.
func parseXML(raw []byte) (*Sitemap, error) {
	dec := xml.NewDecoder(bytes.NewReader(raw))
	dec.Strict = false
	s := &Sitemap{}
	var root string
	var in string // "url" or "sitemap" while inside one
	var field string
	var cur Entry
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if root == "" {
				return nil, err
			}
			s.Truncated = true // a cut or broken document: keep what came before
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := t.Name.Local
			switch {
			case root == "":
				if name != "urlset" && name != "sitemapindex" {
					return nil, fmt.Errorf("root element <%s>, want <urlset> or <sitemapindex>", name)
				}
				root = name
			case in == "" && (name == "url" || name == "sitemap"):
				in, cur = name, Entry{}
			case in != "" && (name == "loc" || name == "lastmod"):
				field = name
			}
		case xml.CharData:
			switch field {
			case "loc":
				cur.Loc += string(t)
			case "lastmod":
				cur.LastMod = lastMod(string(t))
			}
		case xml.EndElement:
			switch name := t.Name.Local; {
			case name == field:
				field = ""
			case name == in:
				in = ""
				cur.Loc = strings.TrimSpace(cur.Loc)
				if cur.Loc == "" {
					continue
				}
				if len(s.URLs)+len(s.Sitemaps) >= MaxEntries {
					s.Truncated = true
					return s, nil
				}
				if name == "url" && root == "urlset" {
					s.URLs = append(s.URLs, cur)
				} else if name == "sitemap" && root == "sitemapindex" {
					s.Sitemaps = append(s.Sitemaps, cur)
				}
			}
		}
	}
	if root == "" {
		return nil, errors.New("no <urlset> or <sitemapindex>")
	}
	return s, nil
}

// lastMod reads a W3C datetime (a date, or a date and time with a zone); zero if it is neither.
func lastMod(v string) time.Time {
	v = strings.TrimSpace(v)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// parseText reads a text sitemap: one absolute URL per line.
func parseText(raw []byte) (*Sitemap, error) {
	s := &Sitemap{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "http://") && !strings.HasPrefix(line, "https://") {
			return nil, fmt.Errorf("text sitemap line %q is not an http(s) URL", cutText(line))
		}
		if len(s.URLs) >= MaxEntries {
			s.Truncated = true
			break
		}
		s.URLs = append(s.URLs, Entry{Loc: line})
	}
	return s, nil
}

func cutText(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}

// FromRobots returns the Sitemap: lines of a robots.txt body, at most MaxEntries.
func FromRobots(body []byte) []string {
	r, err := robotstxt.FromBytes(body)
	if err != nil {
		return nil
	}
	if len(r.Sitemaps) > MaxEntries {
		return r.Sitemaps[:MaxEntries]
	}
	return r.Sitemaps
}
