package scheduler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/refusal"
	"github.com/crawlstack/crawlstack/shared/crawl/seeds"
	"github.com/crawlstack/crawlstack/shared/crawl/specstore"
)

// A seed file's crawl: its id, its report, and reading the file to fan its URLs out.

// CrawlID names the crawl of one seed file version: readable, and stable for the same version so
// that a repeated event resumes the crawl instead of starting it again.
func CrawlID(bucket, key, version string) string {
	sum := sha256.Sum256([]byte(bucket + "/" + key + "@" + version))
	base := strings.TrimSuffix(path.Base(key), path.Ext(key))
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, base)
	if len(clean) > 40 {
		clean = clean[:40]
	}
	return clean + "-" + hex.EncodeToString(sum[:6])
}

// SeedReport is written to crawls/<crawl>/seeds.json for every seed file read.
type SeedReport struct {
	Crawl    string     `json:"crawl"`
	SeedFile string     `json:"seedFile"`
	Accepted int        `json:"accepted"`
	Bad      []BadLine  `json:"bad"`
	ReadAt   time.Time  `json:"readAt"`
	Errors   int        `json:"errors"`
	Limits   SeedLimits `json:"limits"`
	// Spec is set when the seed file is a crawl spec. A spec with Errors starts no crawl.
	Spec bool `json:"spec,omitempty"`
	// Previous names the crawl this one recrawls (the seed file's crawl before it), if any.
	Previous string `json:"previous,omitempty"`
	// ExtendedBy is the version of the seed file last taken into the running crawl (extend.go):
	// the counts are then those of the crawl's readings of the file, from its first line.
	ExtendedBy string `json:"extendedBy,omitempty"`
	// Reading is set while a URL list is read in chunks (seedchunks.go): the report covers the
	// lines read so far.
	Reading bool `json:"reading,omitempty"`
}

// BadLine is a seed line that was not crawled, and why.
type BadLine struct {
	Line  int    `json:"line"`
	Text  string `json:"text"`
	Error string `json:"error"`
}

// SeedLimits records the bounds applied to the seed file.
type SeedLimits struct {
	MaxBytes   int `json:"maxBytes"`
	MaxLine    int `json:"maxLine"`
	MaxReports int `json:"maxReportedBadLines"`
	// MaxLogged is how many bad lines are logged, one line each; the rest are only counted
	// (Errors) and, up to MaxReports, listed in the report.
	MaxLogged int `json:"maxLoggedBadLines"`
}

const maxReportedBad = 1000

// MaxLoggedBadLines is how many bad lines of a seed file are logged, each on a log line of its
// own: a file of millions of bad lines would otherwise make gigabytes of logs (and their bill)
// and a timeout. The count of them all is in the "crawl started" line and the seed report.
const MaxLoggedBadLines = 10

// StartCrawl reads one seed file, a URL list or a crawl spec (crawlspec.IsSpec), and fans its URLs
// out to the schedule queue as Links messages. A spec's settings are stored first, for every
// handler to find (specstore); a spec with any problem starts nothing, and its report lists them
// with their lines. A repeated call (a redelivered event) sends the same messages again;
// admission drops the repeats.
func (h *Handler) StartCrawl(ctx context.Context, key, crawl string) error {
	return h.startCrawl(ctx, seedSource{key: key}, crawl, false)
}

// startCrawl is StartCrawl of the seed file src names; a tick passes over a spec that asks for
// no recrawl. With Progress, a URL list is read in chunks (seedchunks.go), and the crawl's checks
// begin once the last chunk is sent.
func (h *Handler) startCrawl(ctx context.Context, src seedSource, crawl string, tick bool) error {
	key := src.key
	body, err := h.blobs.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("read seed file %s: %w", key, err)
	}
	if len(body) > MaxSeedBytes {
		return h.refuse(ctx, oversize(crawl, key, int64(len(body))))
	}
	report := newReport(crawl, key)
	var spec *crawlspec.Spec
	if crawlspec.IsSpec(key, body) {
		report.Spec = true
		if spec, err = crawlspec.Parse(body, h.cfg.Bounds); err != nil {
			return h.badSpec(ctx, report, err)
		}
		if tick && !spec.Recrawls() {
			h.log.Info("spec asks for no recrawl", "seedFile", key)
			return nil
		}
	}
	if spec == nil && !tick {
		if extended, err := h.extendRunning(ctx, src, crawl, body); extended || err != nil {
			return err
		}
	}
	var settings *crawlspec.Settings
	if spec != nil {
		settings = &spec.Settings
	}
	cost.PayFor(ctx, crawl) // the notification names no crawl: the ledger books the start to this one
	previous, err := h.previousOf(ctx, key, crawl)
	if err != nil {
		return err
	}
	if previous != "" {
		if settings == nil {
			settings = &crawlspec.Settings{Version: crawlspec.Version}
		}
		settings.Previous = previous
	}
	if err := specstore.Save(ctx, h.blobs, crawl, settings); err != nil {
		return err
	}
	if err := h.setLatest(ctx, key, crawl, previous); err != nil {
		return err
	}
	report.Previous = previous
	if err := h.starts.Start(ctx, crawl); err != nil {
		return err
	}
	send := &seedSender{h: h, crawl: crawl}
	add := func(u string) error {
		report.Accepted++
		return send.add(ctx, u)
	}
	if spec != nil {
		for _, u := range spec.Seeds {
			if err = add(u); err != nil {
				break
			}
		}
		if err == nil {
			err = send.sitemaps(ctx, spec)
		}
	} else if h.progress != nil {
		done, err := h.scanInChunks(ctx, src, crawl, body, &report)
		if err != nil {
			return fmt.Errorf("start crawl %s from %s: %w", crawl, key, err)
		}
		if !done {
			return nil // the next invocation goes on, or another delivery is ahead
		}
	} else {
		err = h.scanSeeds(body, crawl, key, 0, &report, add)
	}
	if err == nil {
		err = send.finish(ctx)
	}
	if err == nil && h.links != nil {
		// Named before the crawl's first check: no check misses them. A redelivery sends the same
		// messages, and names them again.
		err = h.links.NoteLinksSent(ctx, crawl, "seeds "+key, send.names)
	}
	if err == nil && h.checks != nil {
		err = h.checks.Begin(ctx, crawl) // after the seeds: a check never finds the crawl before them
	}
	if err != nil {
		return fmt.Errorf("start crawl %s from %s: %w", crawl, key, err)
	}
	h.log.Info("crawl started", "crawl", crawl, "seedFile", key, "seeds", report.Accepted, "badLines", report.Errors,
		"badLinesNotLogged", max(report.Errors-MaxLoggedBadLines, 0), "recrawls", previous)
	if report.Accepted == 0 && report.Errors > 0 {
		return h.refuse(ctx, report) // a URL list with no good line crawls nothing
	}
	return h.writeReport(ctx, report)
}

// scanSeeds reads a URL list (or a chunk of one whose first line is line+1), passing each good URL
// to add and reporting the bad lines.
func (h *Handler) scanSeeds(body []byte, crawl, key string, line int, report *SeedReport, add func(string) error) error {
	return seeds.Scan(bytes.NewReader(body), 0, func(s seeds.Seed) error {
		return add(s.URL.String())
	}, func(le seeds.LineError) {
		report.Errors++
		if report.Errors <= MaxLoggedBadLines {
			h.log.Info("bad seed line", "crawl", crawl, "seedFile", key, "line", line+le.Line, "err", le.Err.Error())
		}
		if len(report.Bad) < maxReportedBad {
			report.Bad = append(report.Bad, BadLine{Line: line + le.Line, Text: le.Text, Error: le.Err.Error()})
		}
	})
}

// badSpec reports a spec that starts no crawl, with each of its problems at its line.
func (h *Handler) badSpec(ctx context.Context, report SeedReport, err error) error {
	var es crawlspec.Errors
	if !errors.As(err, &es) {
		es = crawlspec.Errors{{Msg: err.Error()}}
	}
	for _, e := range es {
		report.Errors++
		if len(report.Bad) < maxReportedBad {
			report.Bad = append(report.Bad, BadLine{Line: e.Line, Error: e.Error()})
		}
	}
	h.log.Warn("crawl spec refused: nothing crawled", "crawl", report.Crawl, "seedFile", report.SeedFile, "problems", len(es), "err", err.Error())
	return h.refuse(ctx, report)
}

// refuse writes the report of a seed file that crawls nothing, then announces it (Refusals). The
// report comes first, so that the event's reader finds it; a failed put fails the seed message,
// whose redelivery writes the same report and puts the event again, with the same id.
func (h *Handler) refuse(ctx context.Context, r SeedReport) error {
	if err := h.writeReport(ctx, r); err != nil {
		return err
	}
	if h.refusals == nil {
		return nil
	}
	reasons := make([]refusal.Reason, 0, min(len(r.Bad), refusal.MaxReasons))
	for _, b := range r.Bad[:min(len(r.Bad), refusal.MaxReasons)] {
		reasons = append(reasons, refusal.Reason{Line: b.Line, Error: b.Error})
	}
	if err := h.refusals.PublishRefusal(ctx, refusal.New(r.Crawl, r.SeedFile, r.Spec, r.ReadAt, r.Errors, reasons)); err != nil {
		return fmt.Errorf("announce the refusal of %s: %w", r.SeedFile, err)
	}
	return nil
}

func newReport(crawl, key string) SeedReport {
	return SeedReport{Crawl: crawl, SeedFile: key, ReadAt: time.Now().UTC(), Bad: []BadLine{},
		Limits: SeedLimits{MaxBytes: MaxSeedBytes, MaxLine: seeds.DefaultMaxLine, MaxReports: maxReportedBad, MaxLogged: MaxLoggedBadLines}}
}

// oversize is the report of a seed file too big to crawl: nothing of it is read.
func oversize(crawl, key string, size int64) SeedReport {
	r := newReport(crawl, key)
	r.Errors = 1
	r.Bad = append(r.Bad, BadLine{Error: fmt.Sprintf("seed file is %d bytes, over the %d-byte limit: split it into smaller files", size, MaxSeedBytes)})
	return r
}

func (h *Handler) writeReport(ctx context.Context, r SeedReport) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	key := layout.SeedReport(r.Crawl)
	if err := h.blobs.Put(ctx, key, b, "application/json"); err != nil {
		return fmt.Errorf("write seed report %s: %w", key, err)
	}
	return nil
}
