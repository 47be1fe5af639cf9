package purge

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/ops/crawlindex"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// CrawlReport is what a purge did in one crawl.
type CrawlReport struct {
	Crawl string `json:"crawl"`
	// URLs are the URLs whose items (and outcomes) were erased from the table.
	URLs []string `json:"urls"`
	// WARCRecords counts the WARC records removed (a page's response and request records).
	WARCRecords int `json:"warcRecords"`
	// WARCFilesRewritten were rewritten without them; WARCFilesDeleted held nothing else.
	WARCFilesRewritten []string `json:"warcFilesRewritten,omitempty"`
	WARCFilesDeleted   []string `json:"warcFilesDeleted,omitempty"`
	// RecordLines counts the records (JSON lines) removed; OutLinks the links to the purged
	// URLs removed from other pages' records.
	RecordLines int `json:"recordLines"`
	OutLinks    int `json:"outLinks"`
	// RecordFilesRewritten and RecordFilesDeleted are the records files changed.
	RecordFilesRewritten []string `json:"recordFilesRewritten,omitempty"`
	RecordFilesDeleted   []string `json:"recordFilesDeleted,omitempty"`
	// PagesMoved counts the other pages whose stored offsets were changed to follow their records
	// in a rewritten file (on their items and in their records).
	PagesMoved int `json:"pagesMoved"`
	// RecordsMoved counts the other pages' records whose WARC offsets were changed so.
	RecordsMoved int `json:"recordsMoved"`
	// Budgets are the per-host page budget items deleted (a host purge).
	Budgets int `json:"budgets,omitempty"`
	// IndexesRewritten are the CDXJ indexes written again: beside the rewritten WARC files, and
	// the crawl's (indexes/<crawl>.cdxj), or deleted with the last file.
	IndexesRewritten []string `json:"indexesRewritten,omitempty"`
	// Unresolved are the other pages whose stored record could not be found again: their
	// items and records still name the old offset (never expected; reported, not hidden).
	Unresolved []string `json:"unresolved,omitempty"`
}

// crawl purges one crawl: the table's URLs first, to learn where their pages are; the WARC
// files; the other pages' offsets; the table's items; the records files; the index.
func (p *Purger) crawl(ctx context.Context, crawl string, m matcher) (CrawlReport, error) {
	cr := CrawlReport{Crawl: crawl}
	st := crawlstate.New(p.T)
	var gone, kept []crawlstate.URL
	err := st.ScanURLs(ctx, crawl, func(u crawlstate.URL) error {
		switch {
		case m.match(u.URL) || (u.Page != nil && m.match(u.Page.FinalURL)):
			gone = append(gone, u)
		case u.Page != nil:
			kept = append(kept, u)
		}
		return nil
	})
	if err != nil {
		return cr, fmt.Errorf("scan the URLs: %w", err)
	}
	p.progress("crawl %s: %d URLs to erase from the table", crawl, len(gone))
	ixKey := crawlindex.Key(crawl)
	have, err := p.B.List(ctx, ixKey)
	if err != nil {
		return cr, fmt.Errorf("look for the crawl's index: %w", err)
	}
	crawlIndex := slices.Contains(have, ixKey)
	files, err := p.warcs(ctx, crawl, m, gone, crawlIndex, &cr)
	if err != nil {
		return cr, err
	}
	if err := p.movePages(ctx, st, crawl, kept, files, &cr); err != nil {
		return cr, err
	}
	keys := make([]string, len(gone))
	for i, u := range gone {
		keys[i] = u.Key
		cr.URLs = append(cr.URLs, u.URL)
	}
	if !p.DryRun {
		if err := st.Erase(ctx, crawl, keys); err != nil {
			return cr, err
		}
	}
	if m.target.Kind == optout.Host {
		if err := p.budgets(ctx, crawl, m, &cr); err != nil {
			return cr, err
		}
	}
	if err := p.records(ctx, crawl, m, files, &cr); err != nil {
		return cr, err
	}
	if !crawlIndex {
		return cr, nil
	}
	return cr, p.index(ctx, crawl, files, &cr)
}

// movePages points the kept URLs whose WARC file was rewritten at their records' new places.
func (p *Purger) movePages(ctx context.Context, st *crawlstate.Store, crawl string, kept []crawlstate.URL, files map[string]*warcFile, cr *CrawlReport) error {
	for _, u := range kept {
		f := files[u.Page.WARCKey]
		if f == nil {
			continue
		}
		at, ok := f.find(u.Page.FinalURL, u.Page.Offset)
		if !ok {
			cr.Unresolved = append(cr.Unresolved, u.URL)
			continue
		}
		if at.Offset == u.Page.Offset && at.Length == u.Page.Length {
			continue
		}
		cr.PagesMoved++
		if p.DryRun {
			continue
		}
		if err := st.MovePage(ctx, crawl, u, at.Offset, at.Length); err != nil {
			return err
		}
	}
	return nil
}

// budgets deletes the crawl's page budget items of the purged hosts ("b#<crawl>#<host>").
func (p *Purger) budgets(ctx context.Context, crawl string, m matcher, cr *CrawlReport) error {
	prefix := crawlstate.BudgetPrefix(crawl)
	var keys []string
	err := p.T.Scan(ctx, prefix, func(key string, _ table.Item) error {
		if m.matchHost(strings.TrimPrefix(key, prefix)) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan the host budgets: %w", err)
	}
	cr.Budgets = len(keys)
	for _, k := range keys {
		if p.DryRun {
			continue
		}
		if err := p.T.Delete(ctx, k, table.Cond{}); err != nil {
			return fmt.Errorf("delete %s: %w", k, err)
		}
	}
	return nil
}

// index writes the crawl's CDXJ index again from its files' lines when it does not index them
// as they are, or deletes it when no WARC file is left.
func (p *Purger) index(ctx context.Context, crawl string, files map[string]*warcFile, cr *CrawlReport) error {
	key := crawlindex.Key(crawl)
	var parts [][]byte
	for _, f := range files {
		if !f.deleted {
			parts = append(parts, f.index)
		}
	}
	if len(parts) == 0 {
		cr.IndexesRewritten = append(cr.IndexesRewritten, key)
		p.progress("crawl %s: no WARC file left; deleting its index %s", crawl, key)
		if err := p.deleteBlob(ctx, key); err != nil {
			return fmt.Errorf("delete the index: %w", err)
		}
		return nil
	}
	ix := warcfile.MergeIndexes(parts...)
	stored, err := p.B.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("read the index: %w", err)
	}
	if bytes.Equal(stored, ix) {
		return nil
	}
	cr.IndexesRewritten = append(cr.IndexesRewritten, key)
	if p.DryRun {
		return nil
	}
	p.progress("crawl %s: writing its index %s again", crawl, key)
	if err := p.B.Put(ctx, key, ix, warcfile.IndexContentType); err != nil {
		return fmt.Errorf("store the index: %w", err)
	}
	return nil
}
