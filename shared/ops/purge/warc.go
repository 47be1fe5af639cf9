package purge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// warcFile is a crawl's WARC file as the purge leaves it.
type warcFile struct {
	deleted bool
	// index is its lines of the crawl's CDXJ index (when the crawl has one).
	index []byte
	// pages are its records of pages, response and revisit records, with their spans in the file
	// as it is now.
	pages []warcfile.RecordInfo
}

// find returns where the record of url's page (a response, or a revisit record) is now, given
// where it was (old). Records keep their order and only move towards the file's start, so among
// url's records (a page fetched under two names that redirect to it) it is the last one at or
// before old.
func (f *warcFile) find(url string, old int64) (warcfile.Span, bool) {
	var best warcfile.Span
	found := false
	for _, r := range f.pages {
		if r.TargetURI != url || r.Span.Offset > old {
			continue
		}
		if !found || r.Span.Offset > best.Offset {
			best, found = r.Span, true
		}
	}
	return best, found
}

// warcs removes the purged pages' records from the crawl's WARC files: the records whose
// WARC-Target-URI the purge matches, and the records the purged URLs' items point at (a page
// fetched under the purged URL that redirected elsewhere), each with its request record. A file
// left with no page is deleted, with its index beside it; any other file that changed is rewritten,
// with its index beside it if it has one. An index beside a file that does not index it as it is
// (a purge stopped between the two writes) is written again. It returns every file of the crawl
// as it is now, with its lines of the crawl's index when crawlIndex is set.
func (p *Purger) warcs(ctx context.Context, crawl string, m matcher, gone []crawlstate.URL, crawlIndex bool, cr *CrawlReport) (map[string]*warcFile, error) {
	prefix := layout.PagesDir(crawl)
	keys, err := p.B.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list the WARC files: %w", err)
	}
	have := map[string]bool{}
	var warcs []string
	for _, k := range keys {
		have[k] = true
		if strings.HasSuffix(k, ".warc.gz") {
			warcs = append(warcs, k)
		}
	}
	dropAt := map[string]map[int64]string{} // file -> offset -> the final URL a purged item's page has there
	for _, u := range gone {
		if u.Page == nil {
			continue
		}
		if dropAt[u.Page.WARCKey] == nil {
			dropAt[u.Page.WARCKey] = map[int64]string{}
		}
		dropAt[u.Page.WARCKey][u.Page.Offset] = u.Page.FinalURL
	}
	files := make(map[string]*warcFile, len(warcs))
	for i, k := range warcs {
		data, err := p.B.Get(ctx, k)
		if err != nil {
			return files, fmt.Errorf("read %s: %w", k, err)
		}
		// A record at a purged item's offset is dropped only if it is that item's page: after an
		// interrupted purge another page may have moved there.
		out, kept, dropped, err := warcfile.Filter(data, func(r warcfile.RecordInfo) bool {
			return m.match(r.TargetURI) || (r.TargetURI != "" && dropAt[k][r.Span.Offset] == r.TargetURI)
		})
		if err != nil {
			return files, fmt.Errorf("%s: %w", k, err)
		}
		f := &warcFile{}
		pages := 0
		for _, r := range kept {
			if r.Type == "response" || r.Type == "revisit" {
				f.pages = append(f.pages, r)
			}
			if r.Type != "warcinfo" {
				pages++
			}
		}
		files[k] = f
		if len(dropped) > 0 {
			cr.WARCRecords += len(dropped)
			if err := p.rewrite(ctx, k, out, pages == 0, f, cr); err != nil {
				return files, err
			}
		}
		if !f.deleted && have[k+warcfile.IndexSuffix] {
			if err := p.besideIndex(ctx, k, out, cr); err != nil {
				return files, err
			}
		}
		if !f.deleted && crawlIndex {
			// The crawl's index names a file by its path under the crawl's prefix (docs/warc.md).
			if f.index, err = warcfile.IndexFile(strings.TrimPrefix(k, prefix), out); err != nil {
				return files, fmt.Errorf("index %s: %w", k, err)
			}
		}
		if i+1 == len(warcs) || (i+1)%100 == 0 {
			p.progress("crawl %s: %d of %d WARC files read, %d records to remove", crawl, i+1, len(warcs), cr.WARCRecords)
		}
	}
	return files, nil
}

// rewrite stores the file without the purged records (data), or deletes it, and its index beside
// it, when it holds no page any more (empty).
func (p *Purger) rewrite(ctx context.Context, key string, data []byte, empty bool, f *warcFile, cr *CrawlReport) error {
	if !empty {
		cr.WARCFilesRewritten = append(cr.WARCFilesRewritten, key)
		if p.DryRun {
			return nil
		}
		if err := p.B.Put(ctx, key, data, warcfile.ContentType); err != nil {
			return fmt.Errorf("rewrite %s: %w", key, err)
		}
		return nil
	}
	f.deleted = true
	cr.WARCFilesDeleted = append(cr.WARCFilesDeleted, key)
	for _, k := range []string{key, key + warcfile.IndexSuffix} {
		if err := p.deleteBlob(ctx, k); err != nil {
			return fmt.Errorf("delete %s: %w", k, err)
		}
	}
	return nil
}

// besideIndex writes the index beside the file named key again if it does not index data, the
// file as it is now.
func (p *Purger) besideIndex(ctx context.Context, key string, data []byte, cr *CrawlReport) error {
	ixKey := key + warcfile.IndexSuffix
	// The index beside a file names it without its folders (docs/warc.md).
	ix, err := warcfile.IndexFile(path.Base(key), data)
	if err != nil {
		return fmt.Errorf("index %s: %w", key, err)
	}
	stored, err := p.B.Get(ctx, ixKey)
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("read %s: %w", ixKey, err)
	}
	if bytes.Equal(stored, ix) {
		return nil
	}
	cr.IndexesRewritten = append(cr.IndexesRewritten, ixKey)
	if p.DryRun {
		return nil
	}
	if err := p.B.Put(ctx, ixKey, ix, warcfile.IndexContentType); err != nil {
		return fmt.Errorf("rewrite %s: %w", ixKey, err)
	}
	return nil
}
