// Package ledger keeps each crawl's bill. It wraps a handler so that every invocation runs with a
// meter account in its context (meter.WithAccount): the SDK calls it makes count there, however
// many invocations run at once, and so do its duration at the function's memory and its log
// bytes. When the invocation ends, its units go to the ledger of the crawls its records belong
// to, shared by how many records each had, and are written with the crawl counters.
package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/metrics"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/observe/meter"
)

// LambdaReportBytes is what Lambda itself logs for each invocation at its default system log level
// (the START, END and REPORT lines), which CloudWatch Logs ingests like the function's own lines.
const LambdaReportBytes = 280

// Recorder keeps the crawls' ledgers (crawlstate.Store).
type Recorder interface {
	AddCost(ctx context.Context, crawl string, u cost.Units) error
	Flush(ctx context.Context) error
}

// flushLater is a Recorder whose Flush the handlers also call at the end of their invocations
// (crawlstate.Store): in the context it returns, theirs writes nothing, and the ledger's flush
// after the handler returns writes their counters with the cost, in one write instead of two.
type flushLater interface {
	FlushLater(ctx context.Context) context.Context
}

// handlerContext is the context a wrapped handler runs in: metered into acct, with its payers,
// and with the recorder's flush left to the ledger.
func (l *Ledger) handlerContext(ctx context.Context, acct *meter.Meter) (context.Context, func() []string) {
	hctx, payers := cost.WithPayers(meter.WithAccount(ctx, acct))
	if f, ok := l.State.(flushLater); ok {
		hctx = f.FlushLater(hctx)
	}
	return hctx, payers
}

// Ledger meters invocations.
type Ledger struct {
	State Recorder
	// MemoryMB is the function's memory, to bill its duration at; 0 bills no Lambda compute or
	// requests (a handler run by `crawl run`, which no Lambda bills).
	MemoryMB int
	// Logs, when set, counts the invocation's log bytes (see LogCounter.Handler).
	Logs *LogCounter
	// ReportBytes is what Lambda itself logs for each invocation: LambdaReportBytes at its
	// default system log level (INFO), 0 at WARN, where it writes no START or REPORT line.
	ReportBytes int
	// Polled says the batches come from SQS through an event source mapping (or crawl run's
	// runner on SQS), whose receives and deletes the handler never sees: each batch is booked its
	// cost.BatchRequests as well. BatchSize is the mapping's batch size, to tell a full batch
	// (0: unknown, every batch is taken as not full).
	Polled    bool
	BatchSize int
	// Pollers and PollWait say how the batches' queues are polled (Polled only): how many pollers
	// a queue has and how long each receive waits for a message. 0 means as AWS runs an event
	// source mapping with maximum concurrency set: cost.PollersPerQueue long-polling cost.PollWait.
	// Each batch is also booked the receives those pollers made, as expected, that found nothing
	// since the previous batch of its queue this ledger saw (cost.PollerReceives, emptyReceives).
	Pollers  int
	PollWait time.Duration
	Log      *slog.Logger
	// Now is the clock; tests replace it.
	Now func() time.Time

	// carried are the units of the ledger's own writes (the counters' flush at the end of an
	// invocation, which the handlers' counters ride on), booked to each crawl with its next
	// invocation in this process.
	mu      sync.Mutex
	carried map[string]cost.Units
	// polls are the queues' pollers as this ledger saw them, by queue (the records' source ARN).
	polls map[string]*polling
}

// polling is what a ledger knows of one queue's pollers: when it saw the queue's latest batch
// start, and the fraction of an empty receive that its batches were not booked yet.
type polling struct {
	last time.Time
	owed float64
}

// Handler is an SQS batch handler.
type Handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Wrap meters h.
func (l *Ledger) Wrap(h Handler) Handler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		acct, start, logs := meter.New(), l.now(), l.Logs.taken()
		l.polledBefore(acct, ev.Records, start)
		hctx, payers := l.handlerContext(ctx, acct)
		resp, err := h(hctx, ev)
		l.book(ctx, acct, start, logs, ev.Records, deleted(ev.Records, resp, err), payers())
		return resp, err
	}
}

// Invoker is a handler of any event (the schedule function's).
type Invoker func(context.Context, json.RawMessage) (any, error)

// WrapInvoke meters h, sharing the units of an SQS batch by its records' crawls. The units of
// other events (a seed file's notification, a tick) are booked to no crawl.
func (l *Ledger) WrapInvoke(h Invoker) Invoker {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		acct, start, logs := meter.New(), l.now(), l.Logs.taken()
		var ev events.SQSEvent
		isBatch := json.Unmarshal(raw, &ev) == nil
		if isBatch {
			l.polledBefore(acct, ev.Records, start)
		}
		hctx, payers := l.handlerContext(ctx, acct)
		out, err := h(hctx, raw)
		if !isBatch {
			// Not booked, but the handler's counters wait for a flush (handlerContext).
			if ferr := l.State.Flush(context.WithoutCancel(ctx)); ferr != nil {
				l.logger().Warn("write the crawl counters", "err", ferr.Error())
			}
			return out, err
		}
		resp, _ := out.(events.SQSEventResponse)
		l.book(ctx, acct, start, logs, ev.Records, deleted(ev.Records, resp, err), payers())
		return out, err
	}
}

func (l *Ledger) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// deleted is how many of a batch's records the event source mapping deletes after the handler
// returned resp and err: none when it failed, else all but the failures it named.
func deleted(recs []events.SQSMessage, resp events.SQSEventResponse, err error) int {
	if err != nil {
		return 0
	}
	return max(len(recs)-len(resp.BatchItemFailures), 0)
}

// book adds the invocation's units to its crawls' ledgers and writes them, and logs them with
// the metrics' breakdown in one line.
func (l *Ledger) book(ctx context.Context, acct *meter.Meter, start time.Time, logsBefore int64, recs []events.SQSMessage, deleted int, payers []string) {
	if l.MemoryMB > 0 {
		acct.AddLambda(l.now().Sub(start), l.MemoryMB)
		acct.AddLogBytes(l.ReportBytes)
	}
	if l.Polled && len(recs) > 0 {
		acct.AddSQSRequests(cost.BatchRequests(len(recs), deleted, l.BatchSize > 0 && len(recs) >= l.BatchSize))
	}
	crawls := withPayers(crawlsOf(recs), payers)
	l.logLine(ctx, acct.Snapshot(), recs, crawls)
	acct.AddLogBytes(int(l.Logs.taken() - logsBefore))
	if len(crawls) == 0 {
		// Nothing to book, but the handler's counters wait for this flush (handlerContext).
		if err := l.State.Flush(context.WithoutCancel(ctx)); err != nil {
			l.logger().Warn("write the crawl counters", "err", err.Error())
		}
		return
	}
	ws := make([]int, len(crawls))
	for i, c := range crawls {
		ws[i] = c.records
	}
	ctx = context.WithoutCancel(ctx) // book what was spent even when the invocation ran out of time
	for i, part := range acct.Snapshot().Share(ws) {
		if err := l.State.AddCost(ctx, crawls[i].crawl, part.Add(l.takeCarried(crawls[i].crawl))); err != nil {
			l.logger().Warn("add to the crawl's ledger", "crawl", crawls[i].crawl, "err", err.Error())
		}
	}
	// The flush writes the ledger and the handlers' counters: metered, and booked with the crawls'
	// next invocations.
	flush, began := meter.New(), l.now()
	if err := l.State.Flush(meter.WithAccount(ctx, flush)); err != nil {
		l.logger().Warn("write the crawl's ledger", "err", err.Error())
	}
	spent := flush.Snapshot()
	if l.MemoryMB > 0 { // the function is billed while it writes
		spent.LambdaGBSeconds += l.now().Sub(began).Seconds() * float64(l.MemoryMB) / 1024
	}
	l.carry(crawls, spent.Share(ws))
}

// polledBefore adds to acct, as a batch of recs starts at start, the receives its queue's
// pollers made that found nothing since the queue's previous batch (emptyReceives). It is taken
// as the batch starts, so that batches of a queue that overlap take their gaps in the order they
// started, whatever order they end in.
func (l *Ledger) polledBefore(acct *meter.Meter, recs []events.SQSMessage, start time.Time) {
	if l.Polled && len(recs) > 0 {
		acct.AddSQSRequests(l.emptyReceives(recs[0].EventSourceARN, start))
	}
}

// emptyReceives is what the pollers of queue spent in receives that found nothing between the
// start of the queue's previous batch that this ledger saw and start, this batch's: the
// expectation cost.PollerReceives, in whole receives, the fraction carried to the queue's next
// batch. The first batch of a queue books none (the pollers' receives before it are the idle
// bill's). Gaps are from start to start, since the pollers go on polling while a batch is
// worked on: a ledger that sees every batch of a queue (crawl run, make cost) books its pollers'
// span once. A Lambda container sees only its own batches; docs/cost.md says what that does to
// the estimate.
func (l *Ledger) emptyReceives(queue string, start time.Time) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.polls == nil {
		l.polls = map[string]*polling{}
	}
	p, seen := l.polls[queue]
	if !seen {
		l.polls[queue] = &polling{last: start}
		return 0
	}
	if start.After(p.last) {
		pollers, wait := l.Pollers, l.PollWait
		if pollers <= 0 {
			pollers = cost.PollersPerQueue
		}
		if wait <= 0 {
			wait = cost.PollWait
		}
		p.owed += cost.PollerReceives(pollers, wait, start.Sub(p.last))
		p.last = start
	}
	n := math.Floor(p.owed)
	p.owed -= n
	return int64(n)
}

// carry keeps parts, one a crawl, for the crawls' next invocations.
func (l *Ledger) carry(crawls []weight, parts []cost.Units) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.carried == nil {
		l.carried = map[string]cost.Units{}
	}
	for i, p := range parts {
		if p != (cost.Units{}) {
			l.carried[crawls[i].crawl] = l.carried[crawls[i].crawl].Add(p)
		}
	}
}

// takeCarried returns and forgets what was carried for crawl.
func (l *Ledger) takeCarried(crawl string) cost.Units {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.carried[crawl]
	delete(l.carried, crawl)
	return u
}

// withPayers adds to a batch's crawls those its handler named (cost.PayFor) that no record
// names, each weighing one record.
func withPayers(crawls []weight, payers []string) []weight {
	for _, p := range payers {
		if !slices.ContainsFunc(crawls, func(w weight) bool { return w.crawl == p }) {
			crawls = append(crawls, weight{crawl: p, records: 1})
		}
	}
	return crawls
}

// logLine logs what the invocation spent (its units so far, and their cost at the default prices)
// with the metrics' breakdown (metrics.TakeBreakdown): one line an invocation, which CloudWatch
// Logs Insights sums by crawl, function, class or reason (docs/operating.md). Its own bytes are
// counted in the invocation's.
func (l *Ledger) logLine(ctx context.Context, u cost.Units, recs []events.SQSMessage, crawls []weight) {
	attrs := []any{"records", len(recs), "usd", cost.DefaultPrices().Cost(u).Total,
		slog.Group("units", "sqs", u.SQSRequests, "ddb_wru", u.DynamoDBWriteUnits, "ddb_rru", u.DynamoDBReadUnits,
			"s3_a", u.S3ClassA, "s3_b", u.S3ClassB, "lambda_gbs", u.LambdaGBSeconds, "log_bytes", u.LogBytes)}
	if len(crawls) == 1 {
		attrs = append(attrs, "crawl", crawls[0].crawl)
	} else if len(crawls) > 1 {
		attrs = append(attrs, "crawls", len(crawls))
	}
	b := metrics.TakeBreakdown()
	for _, group := range slices.Sorted(maps.Keys(b)) {
		var kv []any
		for _, k := range slices.Sorted(maps.Keys(b[group])) {
			kv = append(kv, k, b[group][k])
		}
		attrs = append(attrs, slog.Group(group, kv...))
	}
	l.logger().InfoContext(ctx, "invocation", attrs...)
}

func (l *Ledger) logger() *slog.Logger {
	if l.Log != nil {
		return l.Log
	}
	return slog.Default()
}

type weight struct {
	crawl   string
	records int
}

// crawlsOf counts a batch's records by crawl, in the order the crawls first appear. A record
// whose body names no crawl (poison) counts for none.
func crawlsOf(recs []events.SQSMessage) []weight {
	var out []weight
	at := map[string]int{}
	for _, r := range recs {
		var h struct {
			Crawl string `json:"crawl"`
		}
		if json.Unmarshal([]byte(r.Body), &h) != nil || h.Crawl == "" {
			continue
		}
		i, ok := at[h.Crawl]
		if !ok {
			i = len(out)
			at[h.Crawl] = i
			out = append(out, weight{crawl: h.Crawl})
		}
		out[i].records++
	}
	return out
}

// LogCounter counts the bytes a process logs. The zero value is ready; a nil one counts nothing.
type LogCounter struct{ n atomic.Int64 }

func (c *LogCounter) taken() int64 {
	if c == nil {
		return 0
	}
	return c.n.Load()
}

// Writer returns w counting the bytes written through it.
func (c *LogCounter) Writer(w io.Writer) io.Writer { return countingWriter{w: w, c: c} }

type countingWriter struct {
	w io.Writer
	c *LogCounter
}

func (cw countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.c.n.Add(int64(n))
	if err != nil {
		return n, fmt.Errorf("log: %w", err)
	}
	return n, nil
}

// Handler returns h counting, in c, the bytes of every record it handles, as h's JSON would write
// them: a Lambda function's logger writes to its standard output, out of reach of a Writer.
func (c *LogCounter) Handler(h slog.Handler) slog.Handler {
	return countingHandler{Handler: h, size: slog.NewJSONHandler(c.Writer(io.Discard), &slog.HandlerOptions{Level: slog.LevelDebug})}
}

type countingHandler struct {
	slog.Handler
	size slog.Handler // formats each record into the counter
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	_ = h.size.Handle(ctx, r) // only counts: writing to io.Discard cannot fail
	return h.Handler.Handle(ctx, r)
}

func (h countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return countingHandler{Handler: h.Handler.WithAttrs(as), size: h.size.WithAttrs(as)}
}

func (h countingHandler) WithGroup(name string) slog.Handler {
	return countingHandler{Handler: h.Handler.WithGroup(name), size: h.size.WithGroup(name)}
}
