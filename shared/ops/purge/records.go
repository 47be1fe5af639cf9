package purge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/records"
)

// records removes the purged pages' records from the crawl's records files, and from the other
// pages' records what names them (links, canonical URLs, data: eraseFromRecord); the other
// records' WARC offsets follow their records in the rewritten files. Lines that do not change are
// kept byte for byte; a line that changes keeps its numbers as they were written.
func (p *Purger) records(ctx context.Context, crawl string, m matcher, files map[string]*warcFile, cr *CrawlReport) error {
	keys, err := p.B.List(ctx, records.Dir(crawl))
	if err != nil {
		return fmt.Errorf("list the records files: %w", err)
	}
	var jsonl []string
	for _, k := range keys {
		if strings.HasSuffix(k, ".jsonl") {
			jsonl = append(jsonl, k)
		}
	}
	for i, k := range jsonl {
		data, err := p.B.Get(ctx, k)
		if err != nil {
			return fmt.Errorf("read %s: %w", k, err)
		}
		out, left, changed, err := p.filterRecords(data, m, files, cr)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		switch {
		case !changed:
		case left == 0:
			cr.RecordFilesDeleted = append(cr.RecordFilesDeleted, k)
			if err := p.deleteBlob(ctx, k); err != nil {
				return fmt.Errorf("delete %s: %w", k, err)
			}
		default:
			cr.RecordFilesRewritten = append(cr.RecordFilesRewritten, k)
			if !p.DryRun {
				if err := p.B.Put(ctx, k, out, records.ContentType); err != nil {
					return fmt.Errorf("rewrite %s: %w", k, err)
				}
			}
		}
		if i+1 == len(jsonl) || (i+1)%100 == 0 {
			p.progress("crawl %s: %d of %d records files read, %d records to remove", crawl, i+1, len(jsonl), cr.RecordLines)
		}
	}
	return nil
}

// filterRecords returns a records file without the purged pages' lines, and how many lines are
// left. A line that is not a record fails it: an erasure cannot tell what such a line holds.
func (p *Purger) filterRecords(data []byte, m matcher, files map[string]*warcFile, cr *CrawlReport) (out []byte, left int, changed bool, err error) {
	var buf bytes.Buffer
	n := 0
	for line := range bytes.Lines(data) {
		n++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec, err := decodeRecord(line)
		if err != nil {
			return nil, 0, false, fmt.Errorf("line %d is not a record: %w", n, err)
		}
		if m.match(rec.URL) || m.match(rec.FinalURL) {
			cr.RecordLines++
			changed = true
			continue
		}
		left++
		mod := m.eraseFromRecord(&rec, cr)
		if f := files[rec.WARC.Key]; f != nil {
			at, ok := f.find(rec.FinalURL, rec.WARC.Offset)
			switch {
			case !ok:
				cr.Unresolved = append(cr.Unresolved, rec.URL)
			case at.Offset != rec.WARC.Offset || at.Length != rec.WARC.Length:
				rec.WARC.Offset, rec.WARC.Length = at.Offset, at.Length
				cr.RecordsMoved++
				mod = true
			}
		}
		if !mod {
			buf.Write(line)
			continue
		}
		changed = true
		enc := json.NewEncoder(&buf) // as parse writes them: one line each, HTML not escaped
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rec); err != nil {
			return nil, 0, false, fmt.Errorf("line %d: %w", n, err)
		}
	}
	return buf.Bytes(), left, changed, nil
}
