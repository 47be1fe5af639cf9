package purge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
)

// decodeRecord reads one records line. Numbers stay as their text (json.Number), so that a line
// written again keeps them byte for byte: an integer of a page's data above 2^53 would change
// as a float64.
func decodeRecord(line []byte) (records.Record, error) {
	var rec records.Record
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&rec); err != nil {
		return rec, err
	}
	if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
		return rec, fmt.Errorf("%d bytes after the record", len(rest))
	}
	return rec, nil
}

// eraseFromRecord removes from another page's record what names the purged URLs: the links to
// them in outLinks and nofollowLinks, a canonical URL that is one, and the values of data and of
// items that name one (a URL of theirs, or, for a host, text that holds the host name). It counts what it
// removed in cr and says whether the record changed.
func (m matcher) eraseFromRecord(rec *records.Record, cr *CrawlReport) bool {
	changed := false
	drop := func(links []string, count *int) []string {
		n := len(links)
		links = slices.DeleteFunc(links, m.match)
		if d := n - len(links); d > 0 {
			*count += d
			changed = true
		}
		return links
	}
	if len(rec.OutLinks) > 0 {
		rec.OutLinks = drop(rec.OutLinks, &cr.OutLinks)
	}
	if len(rec.NoFollowLinks) > 0 {
		rec.NoFollowLinks = drop(rec.NoFollowLinks, &cr.NoFollowLinks)
		if len(rec.NoFollowLinks) == 0 {
			rec.NoFollowLinks = nil
		}
	}
	if m.names(rec.Canonical) {
		rec.Canonical = ""
		cr.Canonicals++
		changed = true
	}
	for name, v := range rec.Data {
		out, dropped, n := m.eraseValue(v)
		if n == 0 {
			continue
		}
		if dropped {
			out = nil // as a field that found nothing
		}
		rec.Data[name] = out
		cr.DataValues += n
		changed = true
	}
	for rule, v := range rec.Items {
		out, _, n := m.eraseValue(v) // a list of objects: a value that names one is set to null
		if n > 0 {
			rec.Items[rule] = out
			cr.DataValues += n
			changed = true
		}
	}
	return changed
}

// eraseValue returns v, a value of a record's data, without the strings that name the purged
// URLs: dropped says v is itself one; a list leaves them out and an object sets them to null.
// n counts the strings taken out. Numbers (json.Number), booleans and other strings are kept.
func (m matcher) eraseValue(v any) (out any, dropped bool, n int) {
	switch v := v.(type) {
	case string:
		if m.names(v) {
			return nil, true, 1
		}
	case []any:
		kept := make([]any, 0, len(v))
		for _, e := range v {
			o, d, k := m.eraseValue(e)
			n += k
			if !d {
				kept = append(kept, o)
			}
		}
		if n > 0 {
			return kept, false, n
		}
	case map[string]any:
		for key, e := range v {
			o, d, k := m.eraseValue(e)
			if k == 0 {
				continue
			}
			n += k
			if d {
				o = nil
			}
			v[key] = o
		}
	}
	return v, false, n
}

// names says whether s, a string of a record, names what is purged: it is a URL the purge
// matches, or it holds the purged URL, or, for a host, the host name (or a host under it).
func (m matcher) names(s string) bool {
	if s == "" {
		return false
	}
	if m.match(s) {
		return true
	}
	switch m.target.Kind {
	case optout.URL:
		return holdsURL(s, m.target.Value)
	case optout.Host:
		return holdsHost(strings.ToLower(s), strings.ToLower(m.target.Value))
	}
	return false
}

// holdsHost says whether text holds host as a host name of its own, or as the end of a longer
// one (www.example.com holds example.com): not as part of another name (notexample.com,
// example.community) or another address (127.0.0.25 does not hold 127.0.0.2).
func holdsHost(text, host string) bool {
	for from := 0; ; {
		i := strings.Index(text[from:], host)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(host)
		before := start == 0 || !hostChar(text[start-1]) || text[start-1] == '.'
		after := end == len(text) || !hostChar(text[end]) ||
			(text[end] == '.' && (end+1 == len(text) || !hostChar(text[end+1])))
		if before && after {
			return true
		}
		from = start + 1
	}
}

// hostChar says whether c may be part of a host name or address.
func hostChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.'
}

// holdsURL says whether text holds the URL u whole: not as the start of a longer URL
// (http://a.test/p10 does not hold http://a.test/p1).
func holdsURL(text, u string) bool {
	for from := 0; ; {
		i := strings.Index(text[from:], u)
		if i < 0 {
			return false
		}
		end := from + i + len(u)
		if end == len(text) || !urlChar(text[end]) {
			return true
		}
		from += i + 1
	}
}

// urlChar says whether c, after a URL, would go on with its path, query or fragment.
func urlChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_~/%?#=&+", c) >= 0
}
