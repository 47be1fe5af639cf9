package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"
	"github.com/crawlstack/crawlstack/shared/port/blob"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// A URL list is read in chunks of whole lines, with a checkpoint on the crawl's item after each
// (crawlstate.SeedProgress): a chunk's Links messages are sent and named, then the report so far is
// written, then the checkpoint moves past the chunk, on the condition that it is where this
// invocation read it. An invocation stops taking chunks once its time budget is spent, and sends
// the seed file's notification again for the next to go on; one that times out or crashes is
// redelivered, and goes on from the last checkpoint: the chunk it was sending is sent again, and
// admission drops its repeats. Two deliveries at once race on the checkpoint, and the one that
// loses stops.

// Defaults of Config.SeedChunkBytes and Config.SeedBudget.
const (
	DefaultSeedChunkBytes = 256 << 10 // some 10,000 URLs: about 100 Links messages, 10 sends
	DefaultSeedBudget     = 20 * time.Second
)

// Progress keeps how far a crawl's seed file was read (crawlstate.Runs).
type Progress interface {
	SeedProgress(ctx context.Context, crawl string) (crawlstate.SeedProgress, error)
	SaveSeedProgress(ctx context.Context, crawl string, from, to crawlstate.SeedProgress) (bool, error)
}

// seedSource names a seed file's notification, to send it again for the next invocation: the
// bucket and version that make its crawl's id (CrawlID).
type seedSource struct {
	bucket, key, version string
}

// notification is the S3 notification of src, as seedFile reads it.
func (src seedSource) notification() (string, error) {
	var r events.S3EventRecord
	r.EventName = "ObjectCreated:Put"
	r.S3.Bucket.Name, r.S3.Object.Key, r.S3.Object.URLDecodedKey, r.S3.Object.Sequencer = src.bucket, src.key, src.key, src.version
	b, err := json.Marshal(events.S3Event{Records: []events.S3EventRecord{r}})
	return string(b), err
}

// nextChunk returns the chunk of body from off: at most max bytes, extended to the end of its last
// line, and the lines in it.
func nextChunk(body []byte, off int64, max int) ([]byte, int) {
	rest := body[off:]
	end := min(len(rest), max)
	if end < len(rest) {
		if i := bytes.IndexByte(rest[end:], '\n'); i >= 0 {
			end += i + 1
		} else {
			end = len(rest)
		}
	}
	chunk := rest[:end]
	lines := bytes.Count(chunk, []byte("\n"))
	if len(chunk) > 0 && chunk[len(chunk)-1] != '\n' {
		lines++
	}
	return chunk, lines
}

// scanInChunks reads the URL list body from the crawl's checkpoint, a chunk at a time, until the
// file is read (it returns true) or the budget is spent (the notification is sent again, and it
// returns false). report is the report so far, and ends as the whole file's.
func (h *Handler) scanInChunks(ctx context.Context, src seedSource, crawl string, body []byte, report *SeedReport) (bool, error) {
	cp, err := h.progress.SeedProgress(ctx, crawl)
	if err != nil {
		return false, err
	}
	if cp.Offset > 0 {
		if err := h.resumeReport(ctx, crawl, cp, report); err != nil {
			return false, err
		}
	}
	start := h.now()
	for cp.Offset < int64(len(body)) {
		chunk, lines := nextChunk(body, cp.Offset, h.cfg.SeedChunkBytes)
		send := &seedSender{h: h, crawl: crawl}
		add := func(u string) error {
			report.Accepted++
			return send.add(ctx, u)
		}
		if err := h.scanSeeds(chunk, crawl, src.key, cp.Line, report, add); err != nil {
			return false, err
		}
		if err := send.finish(ctx); err != nil {
			return false, err
		}
		if h.links != nil {
			by := "seeds " + src.key + " @" + strconv.FormatInt(cp.Offset, 10)
			if err := h.links.NoteLinksSent(ctx, crawl, by, send.names); err != nil {
				return false, err
			}
		}
		next := crawlstate.SeedProgress{Offset: cp.Offset + int64(len(chunk)), Line: cp.Line + lines,
			Accepted: report.Accepted, Errors: report.Errors}
		partial := *report
		partial.Reading = next.Offset < int64(len(body))
		if err := h.writeReport(ctx, partial); err != nil {
			return false, err
		}
		ok, err := h.progress.SaveSeedProgress(ctx, crawl, cp, next)
		if err != nil {
			return false, fmt.Errorf("checkpoint the seed file at line %d: %w", next.Line, err)
		}
		if !ok {
			h.log.Info("another delivery of the seed file is ahead: this one stops", "crawl", crawl, "seedFile", src.key, "line", cp.Line)
			return false, nil
		}
		cp = next
		// Each invocation takes one chunk at least. A call with no notification to send on
		// (StartCrawl's) reads the file whole.
		if cp.Offset < int64(len(body)) && h.now().Sub(start) >= h.cfg.SeedBudget && CrawlID(src.bucket, src.key, src.version) == crawl {
			return false, h.sendOn(ctx, src, crawl, cp)
		}
	}
	return true, nil
}

// resumeReport sets report to the one written by the checkpoint cp's invocation: its counts, and
// the bad lines it had read (a report written after cp, by an invocation that stopped before its
// checkpoint, lists lines that will be read again).
func (h *Handler) resumeReport(ctx context.Context, crawl string, cp crawlstate.SeedProgress, report *SeedReport) error {
	raw, err := h.blobs.Get(ctx, layout.SeedReport(crawl))
	var was SeedReport
	switch {
	case errors.Is(err, blob.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read the seed report so far: %w", err)
	default:
		if err := json.Unmarshal(raw, &was); err != nil {
			return fmt.Errorf("decode the seed report so far: %w", err)
		}
	}
	report.Accepted, report.Errors = cp.Accepted, cp.Errors
	for _, b := range was.Bad {
		if b.Line <= cp.Line {
			report.Bad = append(report.Bad, b)
		}
	}
	return nil
}

// sendOn sends the seed file's notification again, for the next invocation to go on from cp.
func (h *Handler) sendOn(ctx context.Context, src seedSource, crawl string, cp crawlstate.SeedProgress) error {
	body, err := src.notification()
	if err != nil {
		return err
	}
	if err := h.send.SendBatch(ctx, h.cfg.ScheduleQueue, []queue.Entry{{ID: "0", Body: body}}); err != nil {
		return fmt.Errorf("send the seed file's notification on: %w", err)
	}
	h.log.Info("seed file read in part: going on in the next invocation", "crawl", crawl, "seedFile", src.key,
		"line", cp.Line, "seeds", cp.Accepted, "badLines", cp.Errors)
	return nil
}
