// Package recrawl decides what an incremental recrawl may skip. A crawl that recrawls an earlier
// one (crawlspec.Crawl.Previous) looks each URL up in that crawl's state, one read by key on the
// same table (DynamoDB, or the embedded store): the URL's item keeps the validators and payload
// digest of its response (crawlstate.Page). Fetch then sends them in a conditional request; a
// 304, or a response whose payload digest is the earlier one's, makes the page unchanged: its WARC
// record is a revisit record that refers to the stored payload, and parse reuses the earlier
// crawl's record of the page instead of parsing it (shared/handler/parser). A sitemap's lastmod that is
// older than the earlier fetch makes a page unchanged without any request.
package recrawl

import (
	"net/http"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
)

// ProfileSitemapLastmod is the Unchanged.Profile of a page skipped without any request, because
// its sitemap's lastmod is not after the previous crawl's fetch. It is not a WARC profile: such a
// page has no record in this crawl's WARC files, and its stored page is the payload it refers to.
const ProfileSitemapLastmod = "sitemap-lastmod"

// Prior is what the previous crawl knew of a URL that it fetched.
type Prior struct {
	// ETag and LastModified are the validators its last full response carried.
	ETag, LastModified string
	// FetchedAt is when the previous crawl fetched it (or found it unchanged).
	FetchedAt time.Time
	// Unchanged is what a revisit of the page refers to: where the payload is stored, and the
	// previous crawl's record to reuse. Its Profile is empty: the verdict sets it.
	Unchanged message.Unchanged
}

// PriorOf returns what crawl, the previous crawl, knew of u, a URL item of that crawl: ok is false
// when it did not fetch the page whole with a 2xx status, or fetched it before validators were
// kept, and the recrawl fetches it as a first crawl would.
func PriorOf(crawl string, u crawlstate.URL) (Prior, bool) {
	p := u.Page
	if u.State != crawlstate.Fetched || p == nil || p.Status < 200 || p.Status > 299 {
		return Prior{}, false
	}
	pr := Prior{ETag: p.ETag, LastModified: p.LastModified, FetchedAt: p.FetchedAt}
	if p.Unchanged != nil {
		pr.Unchanged = *p.Unchanged
		pr.Unchanged.Profile = ""
	} else {
		if p.Digest == "" {
			return Prior{}, false
		}
		pr.Unchanged = message.Unchanged{Payload: message.Ref{Key: p.WARCKey, Offset: p.Offset, Length: p.Length},
			URI: p.FinalURL, Date: p.FetchedAt, Digest: p.Digest}
	}
	pr.Unchanged.Crawl, pr.Unchanged.Msg = crawl, p.Msg
	return pr, true
}

// Verdict says whether a response to the recrawl's request shows the page unchanged: a 304, or a
// 2xx whose payload digest is the prior one. It returns the revisit record's reference and the
// Unchanged to record, with its profile set.
func (p Prior) Verdict(status int, body []byte) (warcfile.Revisit, message.Unchanged, bool) {
	var profile string
	switch {
	case status == http.StatusNotModified:
		profile = warcfile.ProfileNotModified
	case status >= 200 && status <= 299 && warcfile.PayloadDigest(body) == p.Unchanged.Digest:
		profile = warcfile.ProfileIdenticalPayload
	default:
		return warcfile.Revisit{}, message.Unchanged{}, false
	}
	u := p.Unchanged
	u.Profile = profile
	return warcfile.Revisit{Profile: profile, RefersToURI: u.URI, RefersToDate: u.Date, Digest: u.Digest}, u, true
}

// NotModifiedSince reports whether a sitemap's lastmod says the page has not changed since the
// previous crawl got it: the whole span lastmod may stand for ends before that fetch. A lastmod
// of a day (a date alone, or midnight) stands for the whole day, any other for its second: a page
// changed later that day, or that second, is never skipped.
func (p Prior) NotModifiedSince(lastmod time.Time) bool {
	if lastmod.IsZero() {
		return false
	}
	end := lastmod.Add(time.Second)
	if lastmod.UTC().Truncate(24 * time.Hour).Equal(lastmod.UTC()) {
		end = lastmod.Add(24 * time.Hour)
	}
	return !end.After(p.FetchedAt)
}
