// Package purge erases what the crawler stored of a site or a page, for an erasure request
// (GDPR article 17, CCPA): `crawl purge --host H` or `--url U` (docs/erasure.md). It works on the
// ports, so it is the same on both backends. For each crawl it removes the URLs' items and
// outcomes from the state table, their WARC records from the WARC files (a file that holds other
// pages is rewritten without them, with gowarc's reader; see warcfile.Filter), their lines from the
// records files, and rebuilds the crawl's CDXJ index; the other pages' stored offsets follow
// their records (response and revisit records, and the earlier crawl's payload that a revisit
// reuses, which is why every crawl's files are done before the rest of any crawl). It first leaves a tombstone on the opt-out list, so that no crawl fetches the
// URLs again, and at the end an audit record of what it deleted, when and why.
//
// A purge that fails part way is run again: every step finds what is left of its work, and the
// other pages' offsets are checked against the files as they are, not as the failed run left them.
package purge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Blobs is the object store a purge reads and changes (blob.Store and blob.Deleter).
type Blobs interface {
	List(ctx context.Context, prefix string) ([]string, error)
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, body []byte, contentType string) error
	Delete(ctx context.Context, key string) error
}

// Request says what to purge.
type Request struct {
	// Target is an opt-out entry of kind optout.Host (the host and every host under it) or
	// optout.URL (one URL, normalised): what is purged, and the tombstone left.
	Target optout.Entry
	// Reason is why, for the audit record and the tombstone (an owner's request, a ticket).
	Reason string
	// Crawls limits the purge to these crawls; none: every crawl in the table or the bucket.
	Crawls []string
}

// Purger purges. Its zero value is not usable: set T and B.
type Purger struct {
	T table.Table
	B Blobs
	// DryRun finds and reports what would be deleted, and changes nothing.
	DryRun bool
	// Progress, if set, is told what the purge is doing, a line at a time.
	Progress func(line string)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Kept names the copies of the stores that the purge cannot reach, for its report: the
	// backend's backups (PITRKept on AWS).
	Kept []string
}

// PITRKept is what a purge on AWS leaves in the table's backups: DynamoDB point-in-time recovery,
// on by default in the stack, can restore the table as it was at any second of the last 35 days,
// erased items included. Deploy with pointInTimeRecovery=false under erasure duties
// (docs/erasure.md, docs/deploy.md).
const PITRKept = "DynamoDB point-in-time recovery (on unless the stack is deployed with pointInTimeRecovery=false): " +
	"a restore to a time before this purge brings the erased table items back, for 35 days; " +
	"deploy with -c pointInTimeRecovery=false under erasure duties (docs/erasure.md)"

// AuditPrefix is where the audit records lie: audit/purge/<time>-<target>.json.
const AuditPrefix = layout.Audit

// Purge does what r asks and returns what it did (or, with DryRun, would do). An error names the
// step and the object it failed on; what was done before it is in the report, and running the
// purge again finishes the work.
func (p *Purger) Purge(ctx context.Context, r Request) (Report, error) {
	if r.Target.Kind != optout.Host && r.Target.Kind != optout.URL {
		return Report{}, fmt.Errorf("purge: want a host or a URL, got %s %q", r.Target.Kind, r.Target.Value)
	}
	now := p.now()
	rep := Report{Target: r.Target, Reason: r.Reason, Started: now, DryRun: p.DryRun, Kept: p.Kept}
	crawls, err := p.crawls(ctx, r.Crawls)
	if err != nil {
		return rep, err
	}
	if !p.DryRun {
		// The tombstone goes first: from here on no crawl admits the URLs, so none comes back
		// while the purge runs.
		tomb := r.Target
		tomb.Reason, tomb.Added = "purged: "+r.Reason, now
		if err := (optout.Store{T: p.T}).Add(ctx, tomb); err != nil {
			return rep, fmt.Errorf("purge: tombstone: %w", err)
		}
		rep.Tombstone = &tomb
	}
	if err := p.purgeCrawls(ctx, crawls, matcher{target: r.Target}, &rep); err != nil {
		return rep, fmt.Errorf("purge %s %s %w", r.Target.Kind, r.Target.Value, err)
	}
	m := matcher{target: r.Target}
	if r.Target.Kind == optout.Host && !p.DryRun {
		if err := p.hostSlots(ctx, m); err != nil {
			return rep, err
		}
	}
	if rep.StillNamedIn, err = p.leftovers(ctx, r.Target.Value); err != nil {
		return rep, err
	}
	rep.Finished = p.now()
	if !p.DryRun {
		if rep.Audit, err = p.audit(ctx, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// purgeCrawls purges the crawls: the WARC files of every crawl first, then the rest of each, so
// that a page whose record an earlier crawl's file holds (the payload a revisit reuses) follows it.
func (p *Purger) purgeCrawls(ctx context.Context, crawls []string, m matcher, rep *Report) error {
	rep.Crawls = make([]CrawlReport, len(crawls))
	all := map[string]*warcFile{}
	scans := make([]*crawlPurge, len(crawls))
	for i, c := range crawls {
		rep.Crawls[i].Crawl = c
		var err error
		if scans[i], err = p.scan(ctx, c, m, &rep.Crawls[i]); err != nil {
			rep.Crawls = rep.Crawls[:i+1] // the crawls not reached have nothing to report
			return fmt.Errorf("in crawl %s: %w", c, err)
		}
		maps.Copy(all, scans[i].files)
	}
	for i, c := range scans {
		if err := p.finish(ctx, c, all, m, &rep.Crawls[i]); err != nil {
			return fmt.Errorf("in crawl %s: %w", c.crawl, err)
		}
	}
	return nil
}

func (p *Purger) now() time.Time {
	if p.Now != nil {
		return p.Now().UTC()
	}
	return time.Now().UTC()
}

func (p *Purger) progress(format string, args ...any) {
	if p.Progress != nil {
		p.Progress(fmt.Sprintf(format, args...))
	}
}

// crawls returns the crawls to purge: those asked for, each checked to exist, or every crawl the
// table or the bucket knows of (a crawl's table items expire with their TTL; its files stay).
func (p *Purger) crawls(ctx context.Context, asked []string) ([]string, error) {
	known := map[string]bool{}
	list, err := crawlstate.New(p.T).Crawls(ctx)
	if err != nil {
		return nil, fmt.Errorf("purge: list the crawls: %w", err)
	}
	for _, c := range list {
		known[c.ID] = true
	}
	for _, prefix := range []string{layout.Pages, layout.RecordsCrawls} {
		keys, err := p.B.List(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("purge: list %s: %w", prefix, err)
		}
		for _, k := range keys {
			if c, _, ok := strings.Cut(strings.TrimPrefix(k, prefix), "/"); ok && c != "" {
				known[c] = true
			}
		}
	}
	if len(asked) == 0 {
		out := make([]string, 0, len(known))
		for c := range known {
			out = append(out, c)
		}
		slices.Sort(out)
		return out, nil
	}
	for _, c := range asked {
		if !known[c] {
			return nil, fmt.Errorf("purge: crawl %q: no such crawl in the table or the bucket (crawl status lists them)", c)
		}
	}
	return asked, nil
}

// matcher says whether a URL is one the purge erases.
type matcher struct{ target optout.Entry }

func (m matcher) match(raw string) bool {
	if raw == "" {
		return false
	}
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		// Not a URL the crawler would have fetched; compare it as it is.
		u, err = url.Parse(raw)
		if err != nil {
			return false
		}
	}
	_, ok := optout.Match([]optout.Entry{m.target}, u)
	return ok
}

// matchHost says whether a host is the target host or under it.
func (m matcher) matchHost(host string) bool {
	return m.target.Kind == optout.Host && m.match("http://"+host+"/")
}

// hostSlots deletes the politeness slot of the purged hosts, which every crawl shares.
func (p *Purger) hostSlots(ctx context.Context, m matcher) error {
	var hosts []string
	err := crawlstate.EachSlot(ctx, p.T, func(host string) error {
		if m.matchHost(host) {
			hosts = append(hosts, host)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("purge: read the politeness slots: %w", err)
	}
	for _, h := range hosts {
		if err := crawlstate.DeleteSlot(ctx, p.T, h); err != nil {
			return fmt.Errorf("purge: %w", err)
		}
	}
	return nil
}

// deleteBlob deletes key, unless dry-running.
func (p *Purger) deleteBlob(ctx context.Context, key string) error {
	if p.DryRun {
		return nil
	}
	if err := p.B.Delete(ctx, key); err != nil && !errors.Is(err, blob.ErrNotFound) {
		return err
	}
	return nil
}
