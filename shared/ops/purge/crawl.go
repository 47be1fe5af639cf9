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
	// NoFollowLinks, Canonicals and DataValues count what else of other pages' records named
	// them: links in nofollowLinks, canonical URLs, and values of data (docs/erasure.md).
	NoFollowLinks int `json:"nofollowLinks,omitempty"`
	Canonicals    int `json:"canonicals,omitempty"`
	DataValues    int `json:"dataValues,omitempty"`
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
	// HostNotes counts the notes of the purged hosts (throttling, circuit) removed from the
	// crawl's counter shards (a host purge).
	HostNotes int `json:"hostNotes,omitempty"`
	// CookieJars are the purged hosts' cookie jars deleted (a host purge; hosts with a session).
	CookieJars int `json:"cookieJars,omitempty"`
	// IndexesRewritten are the CDXJ indexes written again: beside the rewritten WARC files, and
	// the crawl's (indexes/<crawl>.cdxj), or deleted with the last file.
	IndexesRewritten []string `json:"indexesRewritten,omitempty"`
	// Unresolved are the other pages whose stored record could not be found again: their
	// items and records still name the old offset (never expected; reported, not hidden).
	Unresolved []string `json:"unresolved,omitempty"`
}

// crawlPurge is one crawl's purge, in two steps: its WARC files (scan), then the rest (finish),
// once every crawl's files are done, since a recrawl's pages name records in an earlier crawl's
// files (the payload a revisit reuses).
type crawlPurge struct {
	crawl      string
	gone, kept []crawlstate.URL
	crawlIndex bool
	files      map[string]*warcFile
}

// scan finds the crawl's URLs to erase and removes their records from its WARC files: the table's
// URLs first, to learn where their pages are.
func (p *Purger) scan(ctx context.Context, crawl string, m matcher, cr *CrawlReport) (*crawlPurge, error) {
	c := &crawlPurge{crawl: crawl}
	st := crawlstate.New(p.T)
	err := st.EachURL(ctx, crawl, func(u crawlstate.URL) error {
		switch {
		case m.match(u.URL) || (u.Page != nil && m.match(u.Page.FinalURL)):
			c.gone = append(c.gone, u)
		case u.Page != nil:
			c.kept = append(c.kept, u)
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("scan the URLs: %w", err)
	}
	p.progress("crawl %s: %d URLs to erase from the table", crawl, len(c.gone))
	ixKey := crawlindex.Key(crawl)
	have, err := p.B.List(ctx, ixKey)
	if err != nil {
		return c, fmt.Errorf("look for the crawl's index: %w", err)
	}
	c.crawlIndex = slices.Contains(have, ixKey)
	c.files, err = p.warcs(ctx, crawl, m, c.gone, c.crawlIndex, cr)
	return c, err
}

// finish does the rest of the crawl's purge: the other pages' offsets, in the files of every crawl
// purged (all); the table's items; the records files; the index.
func (p *Purger) finish(ctx context.Context, c *crawlPurge, all map[string]*warcFile, m matcher, cr *CrawlReport) error {
	st := crawlstate.New(p.T)
	if err := p.movePages(ctx, st, c.crawl, c.kept, all, cr); err != nil {
		return err
	}
	keys := make([]string, len(c.gone))
	for i, u := range c.gone {
		keys[i] = u.Key
		cr.URLs = append(cr.URLs, u.URL)
	}
	if !p.DryRun {
		if err := st.Erase(ctx, c.crawl, keys); err != nil {
			return err
		}
	}
	if m.target.Kind == optout.Host {
		if err := p.budgets(ctx, c.crawl, m, cr); err != nil {
			return err
		}
		n, err := crawlstate.EraseHostNotes(ctx, p.T, c.crawl, m.matchHost, p.DryRun)
		if err != nil {
			return err
		}
		cr.HostNotes = n
		if cr.CookieJars, err = crawlstate.DeleteJars(ctx, p.T, c.crawl, m.matchHost, p.DryRun); err != nil {
			return err
		}
	}
	if err := p.records(ctx, c.crawl, m, all, cr); err != nil {
		return err
	}
	if !c.crawlIndex {
		return nil
	}
	return p.index(ctx, c.crawl, c.files, cr)
}

// movePages points the kept URLs whose records are in a file of all at their records' places in
// the file as it is now: the page's own record (a response, or a revisit record), and the payload
// that a revisit reuses, which an earlier crawl's file holds.
func (p *Purger) movePages(ctx context.Context, st *crawlstate.Store, crawl string, kept []crawlstate.URL, all map[string]*warcFile, cr *CrawlReport) error {
	for _, u := range kept {
		to, moved, ok := moved(*u.Page, all)
		if !ok {
			cr.Unresolved = append(cr.Unresolved, u.URL)
			continue
		}
		if !moved {
			continue
		}
		cr.PagesMoved++
		if p.DryRun {
			continue
		}
		if err := st.MovePage(ctx, crawl, u, to); err != nil {
			return err
		}
	}
	return nil
}

// moved returns page with its places (its record, and the payload its revisit reuses) as the
// files of all hold them now; moved says whether any changed, and ok is false when a record in a
// file of all cannot be found.
func moved(page crawlstate.Page, all map[string]*warcFile) (to crawlstate.Page, changed, ok bool) {
	to = page
	if f := all[page.WARCKey]; f != nil {
		at, found := f.find(page.FinalURL, page.Offset)
		if !found {
			return page, false, false
		}
		to.Offset, to.Length = at.Offset, at.Length
	}
	if un := page.Unchanged; un != nil {
		if f := all[un.Payload.Key]; f != nil {
			at, found := f.find(un.URI, un.Payload.Offset)
			if !found {
				return page, false, false
			}
			cp := *un
			cp.Payload.Offset, cp.Payload.Length = at.Offset, at.Length
			to.Unchanged = &cp
		}
	}
	changed = to.Offset != page.Offset || to.Length != page.Length ||
		(to.Unchanged != nil && to.Unchanged.Payload != page.Unchanged.Payload)
	return to, changed, true
}

// budgets deletes the crawl's page budget items of the purged hosts (b#<host> in the crawl's
// partitions).
func (p *Purger) budgets(ctx context.Context, crawl string, m matcher, cr *CrawlReport) error {
	var hosts []string
	err := crawlstate.EachInCrawl(ctx, p.T, crawl, crawlstate.BudgetKind, func(sort string, _ table.Item) error {
		if host := strings.TrimPrefix(sort, crawlstate.BudgetKind); m.matchHost(host) {
			hosts = append(hosts, host)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the host budgets: %w", err)
	}
	cr.Budgets = len(hosts)
	for _, h := range hosts {
		if p.DryRun {
			continue
		}
		if err := crawlstate.DeleteBudget(ctx, p.T, crawl, h); err != nil {
			return err
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
