// Package crawlspec reads crawl specs: one YAML or JSON file with the seeds and the settings of one
// crawl (scope, include and exclude patterns, depth, pages, rate, User-Agent, extra headers,
// recrawl, extraction rules, per-host rules), under a versioned schema (docs/spec.md).
//
// Reading is strict: an unknown key, a wrong type, a bad value or a setting over the stack's bounds
// is an error that names its line, and every such error of the file is reported at once. A spec
// with any error starts no crawl. The stack's settings are the defaults a spec overrides, within
// Bounds.
//
// A spec is parsed with gopkg.in/yaml.v3, whose nodes carry their line and column; JSON is read by
// the same parser (YAML 1.2 holds JSON).
package crawlspec

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/priority"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/doctype"
	"github.com/crawlstack/crawlstack/shared/crawl/web/extract"
)

// Version is the schema version this code reads.
const Version = 1

// Limits of a spec file.
const (
	// MaxSeeds bounds the seeds of one spec; a longer list belongs in a URL list file.
	MaxSeeds = 10_000
	// MaxHeaders bounds the extra request headers, and MaxHeaderBytes their names and values.
	MaxHeaders     = 20
	MaxHeaderBytes = 8 << 10
)

// Settings are what a spec sets for its crawl: nil or empty fields keep the stack's value. They
// are stored as JSON beside the crawl's other reports, for the handlers to read.
type Settings struct {
	Version         int        `json:"version"`
	Scope           scope.Mode `json:"scope,omitempty"`
	Include         []string   `json:"include,omitempty"`
	Exclude         []string   `json:"exclude,omitempty"`
	MaxDepth        *int       `json:"maxDepth,omitempty"`
	MaxPages        *int       `json:"maxPages,omitempty"`
	MaxPagesPerHost *int       `json:"maxPagesPerHost,omitempty"`
	Rate            *float64   `json:"rate,omitempty"`
	UserAgent       string     `json:"userAgent,omitempty"`
	// TLSFingerprint is FingerprintChrome or FingerprintGo ("": the stack's).
	TLSFingerprint string      `json:"tlsFingerprint,omitempty"`
	Headers        http.Header `json:"headers,omitempty"`
	// SecretHeaders are the headers the spec gives by reference ({secret: REF}), by name: the
	// reference (secretref), never the value, which only the fetch handler reads.
	SecretHeaders map[string]string `json:"secretHeaders,omitempty"`
	Recrawl       *bool             `json:"recrawl,omitempty"`
	Sitemaps      bool              `json:"sitemaps,omitempty"`
	Extract       []extract.Field   `json:"extract,omitempty"`
	// Items are the spec's item rules: each yields one item per node it selects, into the
	// record's items.
	Items []extract.Rule `json:"items,omitempty"`
	// Retry is the spec's tries and waits per error class, over the stack's (nil: the stack's).
	Retry *retry.Table `json:"retry,omitempty"`
	// Render is the spec's render section: the pages whose scripts run in a headless browser
	// before they are parsed (nil: none renders).
	Render *Render `json:"render,omitempty"`
	// Hosts are the spec's per-host rules, in file order (HostRule).
	Hosts []HostRule `json:"hosts,omitempty"`
	// Keep are the media types ("application/pdf", "image/*") whose pages are stored in the WARC
	// though they are not parsed: fetched, not skipped with class type.
	Keep []string `json:"keep,omitempty"`
	// Parse are the kinds of response parsed besides HTML (pdf, json, text): fetched, stored and
	// recorded with their text, metadata or fields, where they would end skipped with class type.
	Parse []doctype.Kind `json:"parse,omitempty"`
	// Priority are the spec's priority rules: the order in which each message's URLs are admitted
	// (shared/crawl/priority).
	Priority []priority.Rule `json:"priority,omitempty"`
	// Previous names the crawl this one recrawls: schedule sets it when it starts a crawl of a
	// seed file that an earlier crawl read (the scheduled recrawl, a seed file dropped again). A
	// spec file cannot set it. Fetch sends that crawl's validators with its requests, and a page
	// found unchanged reuses that crawl's payload and links (shared/crawl/recrawl).
	Previous string `json:"previous,omitempty"`
}

// Spec is a parsed spec file.
type Spec struct {
	Settings
	// Seeds are the seed URLs, normalised, in file order.
	Seeds []string
}

// SitemapURLs are the URLs a crawl that reads sitemaps starts from besides its seeds: the
// robots.txt (for its Sitemap: lines) and the /sitemap.xml of each seed's origin, once each.
func (s *Spec) SitemapURLs() []string {
	if !s.Sitemaps {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, raw := range s.Seeds {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		origin := u.Scheme + "://" + u.Host
		if !seen[origin] {
			seen[origin] = true
			out = append(out, origin+"/robots.txt", origin+"/sitemap.xml")
		}
	}
	return out
}

// Recrawls says whether the scheduled re-crawl runs this spec again (the default).
func (s *Settings) Recrawls() bool { return s == nil || s.Recrawl == nil || *s.Recrawl }

// Error is one problem of a spec, at a line and column of the file (0 when it has no place).
type Error struct {
	Line, Column int
	// Key is the path of the setting at fault, such as "extract.price.css".
	Key string
	Msg string
}

func (e Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors are every problem found in one spec, in file order.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return fmt.Sprintf("%d problem(s) in the crawl spec:\n  %s", len(es), strings.Join(lines, "\n  "))
}

// IsSpec tells a spec file from a URL list: by its name (.yaml, .yml, .json), or by its first
// line that is not blank or a comment ("{", "---" or a "version:" key). A URL list never starts
// so.
func IsSpec(name string, body []byte) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	for _, line := range bytes.Split(bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF")), []byte("\n")) {
		l := string(bytes.TrimSpace(line))
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		return strings.HasPrefix(l, "{") || l == "---" || strings.HasPrefix(l, "version:")
	}
	return false
}

// secretHeaders are the request headers that carry credentials: a spec gives their values by
// reference only, and WARC request records hold them redacted (warcfile.Redacted).
var secretHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization"}

// IsSecretHeader says whether name (canonical) is a header that carries credentials.
func IsSecretHeader(name string) bool { return slices.Contains(secretHeaders, name) }

// forbiddenHeaders are the request headers a spec may not set: the fetcher's own (the client
// decodes what it asks for, and says who it is through user_agent), and those that belong to the
// connection or to the recrawl's conditional requests.
var forbiddenHeaders = map[string]string{
	"User-Agent":        "set user_agent instead",
	"Host":              "the URL says it",
	"Accept-Encoding":   "the fetcher decodes what it asks for",
	"Connection":        "it belongs to the connection",
	"Content-Length":    "a GET has no body",
	"Transfer-Encoding": "it belongs to the connection",
	"Te":                "it belongs to the connection",
	"Upgrade":           "it belongs to the connection",
	"Keep-Alive":        "it belongs to the connection",
	"Proxy-Connection":  "it belongs to the connection",
	"If-None-Match":     "the recrawl sets it",
	"If-Modified-Since": "the recrawl sets it",
	"Range":             "pages are fetched whole",
}
