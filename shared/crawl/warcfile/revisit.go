package warcfile

import (
	"bufio"

	"fmt"
	"net/http"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

// The revisit profiles of WARC 1.1 (section 6.7): a recrawl that finds a page unchanged stores a
// revisit record, the response's HTTP header without its payload, that refers to the record of an
// earlier crawl holding the payload.
const (
	// ProfileIdenticalPayload: the server sent the page again, and its payload digest is the
	// earlier one's.
	ProfileIdenticalPayload = gowarc.ProfileIdenticalPayloadDigestV1_1
	// ProfileNotModified: the server answered a conditional request with 304 Not Modified.
	ProfileNotModified = gowarc.ProfileServerNotModifiedV1_1
)

// Revisit says which earlier record a revisit record refers to, and why.
type Revisit struct {
	// Profile is ProfileIdenticalPayload or ProfileNotModified.
	Profile string
	// RefersToURI and RefersToDate are the earlier record's WARC-Target-URI and WARC-Date (the
	// fields replay tools look the payload up by).
	RefersToURI  string
	RefersToDate time.Time
	// Digest is the earlier record's WARC-Payload-Digest. A revisit record carries it, also for a
	// 304 whose own payload is empty, so that an index resolves the page to its payload.
	Digest string
}

// EncodeRevisit builds the revisit record of p (a 304, or a response whose payload is the earlier
// record's) and the request record that fetched it. The record stores p's HTTP header only.
func EncodeRevisit(p Page, r Revisit) (Record, error) {
	if r.Profile != ProfileIdenticalPayload && r.Profile != ProfileNotModified {
		return Record{}, fmt.Errorf("revisit record for %s: unknown profile %q", p.URL, r.Profile)
	}
	if r.RefersToURI == "" || r.RefersToDate.IsZero() || r.Digest == "" {
		return Record{}, fmt.Errorf("revisit record for %s: the earlier record's URI, date and digest are needed", p.URL)
	}
	resp, id, err := newResponse(p)
	if err != nil {
		return Record{}, err
	}
	if r.Profile == ProfileIdenticalPayload && resp.WarcHeader().Get(gowarc.WarcPayloadDigest) != r.Digest {
		resp.Close()
		return Record{}, fmt.Errorf("revisit record for %s: payload digest %s is not the earlier record's %s", p.URL,
			resp.WarcHeader().Get(gowarc.WarcPayloadDigest), r.Digest)
	}
	rev, err := resp.ToRevisitRecord(&gowarc.RevisitRef{Profile: r.Profile, TargetUri: r.RefersToURI,
		TargetDate: r.RefersToDate.UTC().Format(time.RFC3339Nano)})
	resp.Close()
	if err != nil {
		return Record{}, fmt.Errorf("revisit record for %s: %w", p.URL, err)
	}
	h := rev.WarcHeader()
	// gowarc marks every revisit truncated; the record holds what its profile says it holds.
	h.Delete(gowarc.WarcTruncated)
	h.Set(gowarc.WarcPayloadDigest, r.Digest)
	out := Record{entry: entry{url: p.URL, at: p.FetchedAt.UTC(), mime: RevisitMime, status: p.Status, digest: r.Digest}}
	if out.Response, err = compress(rev, 1024); err != nil {
		return Record{}, fmt.Errorf("write warc revisit record for %s: %w", p.URL, err)
	}
	return withRequest(out, p, id)
}

// RevisitMime is the media type an index gives a revisit record, as pywb's and warcio's indexers do.
const RevisitMime = "warc/revisit"

// decodeRevisit reads the HTTP header a revisit record holds, and what it refers to.
func decodeRevisit(rec gowarc.WarcRecord) (Page, error) {
	raw, err := rec.Block().RawBytes()
	if err != nil {
		return Page{}, fmt.Errorf("read warc revisit block: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil {
		return Page{}, fmt.Errorf("read warc revisit block: %w", err)
	}
	resp.Body.Close()
	h := rec.WarcHeader()
	p := Page{URL: h.Get(gowarc.WarcTargetURI), Status: resp.StatusCode, Header: resp.Header, Body: []byte{},
		Revisit: &Revisit{Profile: h.Get(gowarc.WarcProfile), RefersToURI: h.Get(gowarc.WarcRefersToTargetURI),
			Digest: h.Get(gowarc.WarcPayloadDigest)}}
	if t, err := h.GetTime(gowarc.WarcDate); err == nil {
		p.FetchedAt = t
	}
	if t, err := time.Parse(time.RFC3339, h.Get(gowarc.WarcRefersToDate)); err == nil {
		p.Revisit.RefersToDate = t
	}
	return p, nil
}

// revisitEntry is what the index says of a revisit record: its status and the digest of the
// payload it refers to, with the media type RevisitMime.
func revisitEntry(rec gowarc.Record) (entry, bool, error) {
	p, err := decodeRevisit(rec.WarcRecord)
	if err != nil {
		return entry{}, false, err
	}
	return entry{url: p.URL, at: p.FetchedAt.UTC(), mime: RevisitMime, status: p.Status, digest: p.Revisit.Digest,
		span: Span{Offset: rec.Offset, Length: rec.Size}}, true, nil
}
