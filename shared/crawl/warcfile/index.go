package warcfile

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// IndexSuffix names a WARC file's CDXJ index: the file's key with this suffix.
const IndexSuffix = ".cdxj"

// IndexContentType is the media type of a CDXJ index.
const IndexContentType = "text/plain; charset=utf-8"

// entry is what the index says of one response record.
type entry struct {
	url    string
	at     time.Time
	mime   string // the HTTP Content-Type, parameters included (index drops them)
	status int
	digest string // the WARC-Payload-Digest
	span   Span
}

// cdxFields is the JSON part of a CDXJ line, in pywb's field names. Numbers are strings, as pywb's
// and warcio's indexers write them.
type cdxFields struct {
	URL      string `json:"url"`
	Mime     string `json:"mime,omitempty"`
	Status   string `json:"status"`
	Digest   string `json:"digest,omitempty"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
}

// index returns the CDXJ lines of a file's response records, sorted as replay tools need them:
// "<SURT key> <14-digit timestamp> <JSON>", one a line.
func index(filename string, entries []entry) []byte {
	lines := make([]string, 0, len(entries))
	for _, e := range entries {
		mime, _, _ := strings.Cut(e.mime, ";")
		status := strconv.Itoa(e.status)
		if e.status == 0 {
			// A record that holds no HTTP message (a conversion record): as warcio's indexer
			// writes it, no status, and its WARC Content-Type whole.
			status, mime = "", e.mime
		}
		js, err := json.Marshal(cdxFields{URL: e.url, Mime: strings.TrimSpace(mime), Status: status,
			Digest: e.digest, Length: strconv.FormatInt(e.span.Length, 10), Offset: strconv.FormatInt(e.span.Offset, 10),
			Filename: filename})
		if err != nil {
			continue // cannot happen: strings only
		}
		lines = append(lines, SURT(e.url)+" "+e.at.UTC().Format("20060102150405")+" "+string(js)+"\n")
	}
	slices.Sort(lines)
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
	}
	return b.Bytes()
}

// leadingWWW is the www, www1, ... label that SURT keys drop.
var leadingWWW = regexp.MustCompile(`^(https?://)www\d*\.`)

// SURT returns the Sort-friendly URI Reordering Transform of an http(s) URL, the index key of
// pywb and warcio: lower case, without a leading www label, the host's labels reversed and
// comma-joined, the port if any, ")", the path, and the query's parameters sorted.
// "http://www.Example.com:8080/a?b=1&a=2" is "com,example:8080)/a?a=2&b=1". Other URLs are
// their own key.
func SURT(raw string) string {
	if !strings.HasPrefix(raw, "http:") && !strings.HasPrefix(raw, "https:") {
		return raw
	}
	u, err := url.Parse(strings.ToLower(leadingWWW.ReplaceAllString(raw, "$1")))
	if err != nil || u.Host == "" {
		return raw
	}
	labels := strings.Split(u.Hostname(), ".")
	slices.Reverse(labels)
	key := strings.Join(labels, ",")
	if port := u.Port(); port != "" && !defaultPort(u.Scheme, port) {
		key += ":" + port
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	key += ")" + path
	if u.RawQuery != "" {
		args := strings.Split(u.RawQuery, "&")
		slices.Sort(args)
		key += "?" + strings.Join(args, "&")
	}
	return key
}

func defaultPort(scheme, port string) bool {
	return scheme == "http" && port == "80" || scheme == "https" && port == "443"
}
