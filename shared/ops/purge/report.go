package purge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/optout"
)

// Report is what a purge did (or, dry-running, would do). Stored as JSON, it is the audit record.
type Report struct {
	Target   optout.Entry  `json:"target"`
	Reason   string        `json:"reason"`
	Started  time.Time     `json:"started"`
	Finished time.Time     `json:"finished"`
	DryRun   bool          `json:"dryRun,omitempty"`
	Crawls   []CrawlReport `json:"crawls"`
	// Tombstone is the opt-out entry left so that no crawl fetches the URLs again.
	Tombstone *optout.Entry `json:"tombstone,omitempty"`
	// StillNamedIn are objects the purge does not change that name the host or URL: seed files
	// (the user's own input), quarantined messages, crawl reports. docs/erasure.md says what to do.
	StillNamedIn []string `json:"stillNamedIn,omitempty"`
	// Kept are copies out of the purge's reach that still hold what it erased, for a time
	// (Purger.Kept): on AWS, the table's point-in-time recovery.
	Kept []string `json:"kept,omitempty"`
	// Audit is the key of the audit record.
	Audit string `json:"audit,omitempty"`
}

// Totals sums the crawls' reports.
func (r Report) Totals() CrawlReport {
	var t CrawlReport
	for _, c := range r.Crawls {
		t.URLs = append(t.URLs, c.URLs...)
		t.WARCRecords += c.WARCRecords
		t.WARCFilesRewritten = append(t.WARCFilesRewritten, c.WARCFilesRewritten...)
		t.WARCFilesDeleted = append(t.WARCFilesDeleted, c.WARCFilesDeleted...)
		t.RecordLines += c.RecordLines
		t.OutLinks += c.OutLinks
		t.NoFollowLinks += c.NoFollowLinks
		t.Canonicals += c.Canonicals
		t.RecordFilesRewritten = append(t.RecordFilesRewritten, c.RecordFilesRewritten...)
		t.RecordFilesDeleted = append(t.RecordFilesDeleted, c.RecordFilesDeleted...)
		t.PagesMoved += c.PagesMoved
		t.RecordsMoved += c.RecordsMoved
		t.Budgets += c.Budgets
		t.CookieJars += c.CookieJars
		t.HostNotes += c.HostNotes
		t.DataValues += c.DataValues
		t.Unresolved = append(t.Unresolved, c.Unresolved...)
		t.IndexesRewritten = append(t.IndexesRewritten, c.IndexesRewritten...)
	}
	return t
}

// leftoverPrefixes hold objects that may name a URL and that a purge does not change: the seed
// files, the quarantined messages and the crawls' reports.
var leftoverPrefixes = []string{layout.Seeds, layout.Quarantine, layout.Crawls}

// leftovers lists the objects under leftoverPrefixes that name value.
func (p *Purger) leftovers(ctx context.Context, value string) ([]string, error) {
	var named []string
	for _, prefix := range leftoverPrefixes {
		keys, err := p.B.List(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("purge: list %s: %w", prefix, err)
		}
		for _, k := range keys {
			data, err := p.B.Get(ctx, k)
			if err != nil {
				return nil, fmt.Errorf("purge: read %s: %w", k, err)
			}
			if bytes.Contains(data, []byte(value)) {
				named = append(named, k)
			}
		}
	}
	return named, nil
}

// audit stores the report as the purge's audit record, audit/purge/<time>-<kind>-<digest>.json.
func (p *Purger) audit(ctx context.Context, rep Report) (string, error) {
	sum := sha256.Sum256([]byte(rep.Target.Value))
	key := AuditPrefix + rep.Started.Format("20060102T150405.000Z") + "-" + string(rep.Target.Kind) + "-" +
		hex.EncodeToString(sum[:6]) + ".json"
	rep.Audit = key
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return "", fmt.Errorf("purge: audit record: %w", err)
	}
	if err := p.B.Put(ctx, key, append(b, '\n'), "application/json"); err != nil {
		return "", fmt.Errorf("purge: store the audit record: %w", err)
	}
	return key, nil
}
