package scheduler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	return h.readChunks(ctx, src, crawl, body, report, cp, false)
}

// readChunks reads body from the checkpoint cp on, as scanInChunks does. An extension of a running
// crawl (extending) names each chunk's Links messages before it sends them, and always sends the
// notification on when its budget is spent.
func (h *Handler) readChunks(ctx context.Context, src seedSource, crawl string, body []byte, report *SeedReport,
	cp crawlstate.SeedProgress, extending bool) (bool, error) {
	if cp.Offset > 0 {
		if err := h.resumeReport(ctx, crawl, cp, report); err != nil {
			return false, err
		}
	}
	start := h.now()
	for cp.Offset < int64(len(body)) {
		chunk, lines := nextChunk(body, cp.Offset, h.cfg.SeedChunkBytes)
		send := &seedSender{h: h, crawl: crawl, hold: extending}
		add := func(u string) error {
			report.Accepted++
			return send.add(ctx, u)
		}
		if err := h.scanSeeds(chunk, crawl, src.key, cp.Line, report, add); err != nil {
			return false, err
		}
		if err := h.sendChunk(ctx, send, chunkName(src, cp, extending)); err != nil {
			return false, err
		}
		next := crawlstate.SeedProgress{Offset: cp.Offset + int64(len(chunk)), Line: cp.Line + lines,
			Accepted: report.Accepted, Errors: report.Errors, Version: cp.Version}
		if next.Offset == int64(len(body)) {
			next.Digest = digest(body) // read whole: a later version that begins with it reads on from here
		}
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
		resumable := extending || CrawlID(src.bucket, src.key, src.version) == crawl
		if cp.Offset < int64(len(body)) && h.now().Sub(start) >= h.cfg.SeedBudget && resumable {
			return false, h.sendOn(ctx, src, crawl, cp)
		}
	}
	return true, nil
}

// sendChunk sends a chunk's Links messages and names them, as by, for the crawl's end to wait for
// them. A held sender (an extension's) names them first: the crawl is running, and its checks must
// not find it drained while they are on their way (crawlstate/extend.go). A first reading names
// them after: its crawl's checks begin only once the whole file is sent.
func (h *Handler) sendChunk(ctx context.Context, send *seedSender, by string) error {
	if err := send.finish(ctx); err != nil {
		return err
	}
	if h.links != nil {
		if err := h.links.NoteLinksSent(ctx, send.crawl, by, send.names); err != nil {
			return err
		}
	}
	if send.hold {
		return send.send(ctx)
	}
	return nil
}

// chunkName is the name of the chunk at cp in the crawl's notes of Links messages sent.
func chunkName(src seedSource, cp crawlstate.SeedProgress, extending bool) string {
	by := "seeds " + src.key + " @" + strconv.FormatInt(cp.Offset, 10)
	if extending {
		by += " v" + src.version
	}
	return by
}

// digest is the SHA-256 of a seed file, in hex (crawlstate.SeedProgress.Digest).
func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
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
