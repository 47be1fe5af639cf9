// Package scheduler is the schedule handler: it turns the crawl's inputs into Links messages and hands
// their URLs to the frontier (package frontier, which decides what is admitted). It takes three
// kinds of input:
//
//   - an S3 ObjectCreated notification for a seed file (delivered through the schedule queue):
//     the seed file is read, bad lines are reported with their line numbers, and the good URLs are
//     fanned out as Links messages of depth 0 to the schedule queue. A seed file may be a crawl
//     spec (shared/crawl/crawlspec): its settings are stored for the other handlers (shared/crawl/specstore)
//     before its seeds go out, and a spec with any problem starts nothing;
//   - a Links message (seeds, or the out-links of a parsed page): its URLs are admitted by the
//     frontier and fetch messages go out in batches of 10;
//   - an EventBridge "Scheduled Event", invoked directly: every seed file under the re-crawl prefix
//     starts a new crawl, which recrawls the file's previous crawl (previous.go).
//
// S3's own s3:TestEvent message, sent when a notification is configured, is acknowledged and ignored.
package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/refusal"
	"github.com/crawlstack/crawlstack/shared/handler/sqsbatch"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// SeedsPrefix is where seed files are dropped; ReportsPrefix is where seed reports are written.
const (
	SeedsPrefix   = layout.Seeds
	ReportsPrefix = layout.Crawls
	// MaxSeedBytes bounds a seed file (about a million URLs): it is read into memory whole (a URL
	// list then sent in chunks, seedchunks.go), and the schedule function has 256 MB of memory by
	// default. Split bigger lists.
	MaxSeedBytes = 64 << 20
)

// Blobs is what schedule needs of the blob store.
type Blobs interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, body []byte, contentType string) error
	List(ctx context.Context, prefix string) ([]string, error)
}

// Admitter admits the URLs of Links messages (the frontier): each message's on its own, then the
// fetch messages of a whole batch's together. It writes the bookkeeping it buffered when the
// invocation ends (Flush).
type Admitter interface {
	Stage(ctx context.Context, m *message.Links) (*frontier.Staged, error)
	Send(ctx context.Context, staged []*frontier.Staged) []error
	Flush(ctx context.Context) error
}

// Starts records a crawl's start, once, before its seeds go out (frontier.Frontier.Start).
type Starts interface {
	Start(ctx context.Context, crawl string) error
}

// Links names the Links messages in flight, for the crawl's end to wait for them
// (crawlstate.Store): those schedule sends itself, before the crawl's first check, and those it
// is done with, once all their URLs were admitted or refused and their fetch messages sent.
type Links interface {
	NoteLinksSent(ctx context.Context, crawl, by string, links []string) error
	MarkLinksAdmitted(ctx context.Context, crawl string, links []string) error
}

// Checks runs a crawl's drain checks (finish.Checker): Begin sends a started crawl's first (or,
// for a crawl whose checks stopped when it stalled, one that takes them on), and Check runs one
// delivered as message id.
type Checks interface {
	Begin(ctx context.Context, crawl string) error
	Check(ctx context.Context, m *message.Check, id string) error
}

// Config tunes the handler.
type Config struct {
	ScheduleQueue string
	// RecrawlPrefix is the prefix whose seed files a scheduled tick crawls again.
	RecrawlPrefix string
	// Concurrency is how many records of a batch run at once.
	Concurrency int
	// Bounds are the stack's ceilings on what a crawl spec may set.
	Bounds crawlspec.Bounds
	// SeedChunkBytes is the size of the chunks a URL list is read in, with Progress (0:
	// DefaultSeedChunkBytes); SeedBudget the time an invocation takes chunks for before it sends
	// the notification on (0: DefaultSeedBudget).
	SeedChunkBytes int
	SeedBudget     time.Duration
}

// Deps are the handler's collaborators.
type Deps struct {
	// Admit and Starts are the frontier (frontier.Frontier).
	Admit  Admitter
	Starts Starts
	Blobs  Blobs
	Send   queue.Sender
	// Batch runs the records of a batch (nil: a runner without quarantine); its Concurrency is
	// Config.Concurrency.
	Batch *sqsbatch.Runner
	// Log is where the handler logs (nil: slog.Default()).
	Log *slog.Logger
	// Checks, if set, runs each crawl's drain checks, which announce its end (the stack's); nil
	// sends none, and acknowledges a check that comes (crawl run sees the end of its queues itself).
	Checks Checks
	// Links, if set, names the Links messages sent and admitted, for the checks (nil: none named,
	// for tests of admission alone).
	Links Links
	// Refusals, if set, is told of every seed file that starts no crawl, after its seed report is
	// written (the stack's event bus); nil: the report alone says so (crawl run refuses a spec
	// before it starts).
	Refusals Refusals
	// Progress, if set, keeps how far each seed file was read, which is then read in chunks over
	// as many invocations as it takes (seedchunks.go); nil reads it whole in one.
	Progress Progress
	// Extend, if set with Progress, lets a new version of a URL list extend the file's last crawl
	// while that crawl has not ended (extend.go); nil starts a crawl for every version.
	Extend Extender
	// Now is the clock of the seed budget (nil: time.Now).
	Now func() time.Time
}

// Refusals announces a refused seed file (eventbus.Bus).
type Refusals interface {
	PublishRefusal(ctx context.Context, e refusal.Event) error
}

// Handler is the schedule handler.
type Handler struct {
	cfg      Config
	frontier Admitter
	starts   Starts
	blobs    Blobs
	send     queue.Sender
	batch    *sqsbatch.Runner
	log      *slog.Logger
	checks   Checks
	links    Links
	refusals Refusals
	progress Progress
	extend   Extender
	now      func() time.Time
}

// New returns a Handler, complete: nothing is set on it afterwards.
func New(cfg Config, d Deps) *Handler {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Batch == nil {
		d.Batch = &sqsbatch.Runner{Log: d.Log}
	}
	if cfg.RecrawlPrefix == "" {
		cfg.RecrawlPrefix = SeedsPrefix
	}
	if cfg.SeedChunkBytes <= 0 {
		cfg.SeedChunkBytes = DefaultSeedChunkBytes
	}
	if cfg.SeedBudget <= 0 {
		cfg.SeedBudget = DefaultSeedBudget
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	b := *d.Batch
	b.Concurrency = max(cfg.Concurrency, 1)
	return &Handler{cfg: cfg, frontier: d.Admit, starts: d.Starts, blobs: d.Blobs, send: d.Send, batch: &b, log: d.Log, checks: d.Checks,
		links: d.Links, refusals: d.Refusals, progress: d.Progress, extend: d.Extend, now: d.Now}
}

// Invoke is the Lambda entry point: it tells an SQS event from an EventBridge event.
func (h *Handler) Invoke(ctx context.Context, raw json.RawMessage) (any, error) {
	var probe struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
		DetailType string `json:"detail-type"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("schedule: unrecognised event: %w", err)
	}
	switch {
	case len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:sqs":
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("schedule: sqs event: %w", err)
		}
		return h.Handle(ctx, ev)
	case probe.DetailType != "":
		var ev events.EventBridgeEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("schedule: eventbridge event: %w", err)
		}
		return nil, h.Tick(ctx, ev)
	}
	return nil, errors.New("schedule: unrecognised event: neither SQS records nor an EventBridge event")
}

// Handle processes one SQS batch of the schedule queue.
//
// Each Links message is admitted on its own; then the fetch messages of the whole batch go out
// together, so that URLs of many messages (a wide crawl's links come a host to a message) due at
// the same second share one. A message whose URLs could not all be sent fails, to send them when
// it comes again. The others are marked admitted, in one write per crawl of the batch.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	ctx = frontier.WithGroups(ctx) // the batch's URLs share their groups, and so their fetch messages
	var mu sync.Mutex
	var staged []*frontier.Staged
	var ids []string
	resp := h.batch.Run(ctx, ev, func(ctx context.Context, rec events.SQSMessage) error {
		st, err := h.record(ctx, rec)
		if st != nil {
			mu.Lock()
			staged, ids = append(staged, st), append(ids, rec.MessageId)
			mu.Unlock()
		}
		return err
	})
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for i, err := range h.frontier.Send(ctx, staged) {
		if err != nil && !failed[ids[i]] {
			h.log.Warn("send fetch messages", "messageId", ids[i], "err", err.Error())
			failed[ids[i]] = true
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ids[i]})
		}
		r := staged[i].Result
		h.log.Debug("admitted", "crawl", staged[i].Crawl(), "sent", r.Sent, "known", r.Known, "rejected", r.Rejected, "invalid", r.Invalid)
	}
	resp.BatchItemFailures = append(resp.BatchItemFailures, h.markAdmitted(ctx, staged, ids, failed)...)
	h.flush(ctx)
	return resp, nil
}

// markAdmitted marks the Links messages staged and sent admitted, those of a crawl in one write,
// and returns the messages to fail because their mark failed: they come again, and are marked then.
func (h *Handler) markAdmitted(ctx context.Context, staged []*frontier.Staged, ids []string, failed map[string]bool) []events.SQSBatchItemFailure {
	if h.links == nil {
		return nil
	}
	var order []string
	names, of := map[string][]string{}, map[string][]string{}
	for i, st := range staged {
		if failed[ids[i]] {
			continue
		}
		c := st.Crawl()
		if _, ok := names[c]; !ok {
			order = append(order, c)
		}
		names[c], of[c] = append(names[c], st.Name()), append(of[c], ids[i])
	}
	var out []events.SQSBatchItemFailure
	for _, c := range order {
		if err := h.links.MarkLinksAdmitted(ctx, c, names[c]); err != nil {
			h.log.Warn("mark links messages admitted", "crawl", c, "messages", len(names[c]), "err", err.Error())
			for _, id := range of[c] {
				out = append(out, events.SQSBatchItemFailure{ItemIdentifier: id})
			}
		}
	}
	return out
}

// flush writes the counters buffered during the invocation.
func (h *Handler) flush(ctx context.Context) {
	if err := h.frontier.Flush(ctx); err != nil {
		h.log.Warn("flush the crawl counters", "err", err.Error())
	}
}

// record admits the URLs of a Links message and returns its fetch messages, to be sent with the
// batch's; it handles any other record at once.
func (h *Handler) record(ctx context.Context, rec events.SQSMessage) (*frontier.Staged, error) {
	m, err := message.DecodeLinks(rec.Body)
	if err != nil {
		return nil, h.notification(ctx, rec, err)
	}
	return h.frontier.Stage(ctx, m)
}

// notification handles a record that is not a Links message: an S3 notification of a seed file,
// or S3's test event. Anything else is poison, for the reason the Links decoder gave (notLinks).
// Links messages are nearly all the queue carries, so they are decoded first and only once.
func (h *Handler) notification(ctx context.Context, rec events.SQSMessage, notLinks error) error {
	var probe struct {
		Records json.RawMessage `json:"Records"`
		Event   string          `json:"Event"`
		Kind    message.Kind    `json:"kind"`
	}
	if err := json.Unmarshal([]byte(rec.Body), &probe); err != nil {
		return errclass.Errorf(errclass.Poison, "not a JSON message: %v", err)
	}
	switch {
	case probe.Kind == message.KindCheck:
		return h.check(ctx, rec)
	case probe.Event == "s3:TestEvent":
		h.log.Info("acknowledged the S3 test event")
		return nil
	case probe.Records != nil:
		var ev events.S3Event
		if err := json.Unmarshal([]byte(rec.Body), &ev); err != nil {
			return errclass.Errorf(errclass.Poison, "s3 notification: %v", err)
		}
		for _, r := range ev.Records {
			if err := h.seedFile(ctx, r); err != nil {
				return err
			}
		}
		return nil
	}
	return notLinks
}

func (h *Handler) seedFile(ctx context.Context, r events.S3EventRecord) error {
	if !strings.HasPrefix(r.EventName, "ObjectCreated:") {
		h.log.Info("ignoring an S3 event that is not ObjectCreated", "event", r.EventName)
		return nil
	}
	key := r.S3.Object.URLDecodedKey
	if key == "" {
		key = r.S3.Object.Key
	}
	version := r.S3.Object.Sequencer
	if version == "" {
		version = r.S3.Object.ETag
	}
	crawl := CrawlID(r.S3.Bucket.Name, key, version)
	if r.S3.Object.Size > MaxSeedBytes { // refuse before reading it into memory
		return h.refuse(ctx, oversize(crawl, key, r.S3.Object.Size))
	}
	return h.startCrawl(ctx, seedSource{bucket: r.S3.Bucket.Name, key: key, version: version}, crawl, false)
}

// check runs a crawl's drain check.
func (h *Handler) check(ctx context.Context, rec events.SQSMessage) error {
	m, err := message.DecodeCheck(rec.Body)
	if err != nil {
		return err
	}
	if h.checks == nil {
		h.log.Info("a drain check with no checker here: acknowledged", "crawl", m.Crawl, "seq", m.Seq)
		return nil
	}
	return h.checks.Check(ctx, m, rec.MessageId)
}

// Tick handles an EventBridge scheduled event: each seed file under the re-crawl prefix starts a
// new crawl, named after the file and the tick's time.
func (h *Handler) Tick(ctx context.Context, ev events.EventBridgeEvent) error {
	keys, err := h.blobs.List(ctx, h.cfg.RecrawlPrefix)
	if err != nil {
		return fmt.Errorf("list seed files: %w", err)
	}
	var errs []error
	for _, key := range keys {
		if strings.HasSuffix(key, "/") {
			continue
		}
		id := CrawlID("", key, "tick@"+ev.Time.UTC().Format(time.RFC3339))
		if err := h.startCrawl(ctx, seedSource{key: key, version: "tick@" + ev.Time.UTC().Format(time.RFC3339)}, id, true); err != nil {
			errs = append(errs, err)
		}
	}
	h.log.Info("scheduled re-crawl", "seedFiles", len(keys), "failed", len(errs))
	h.flush(ctx)
	return errors.Join(errs...)
}
