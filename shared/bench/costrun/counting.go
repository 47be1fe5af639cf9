package costrun

// The ports of a measured crawl, wrapped to count what the report shows besides the meter's
// units: the table's writes by item and function, the fetch messages sent and sent again, the
// runner's early empty receives and the handlers' log bytes; and the queue depths the runner reads,
// which no event source mapping makes, left out of the meter.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/observe/meter"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// keyWrites counts the writes each table item receives, and each function's by kind of item;
// each function writes through its own view of the table (of). The meter's units of each kind's
// writes go to an account of the kind (units).
type keyWrites struct {
	t     table.Table
	mu    sync.Mutex
	n     map[table.Key]int64
	byFn  map[string]map[string]int64 // function -> kind (crawlstate.KindOf) -> writes
	units map[string]*meter.Meter     // kind -> the meter's account of its writes
}

// count counts a write of fn to key, and returns ctx with the account of key's kind.
func (k *keyWrites) count(ctx context.Context, fn string, key table.Key) context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n, k.byFn, k.units = map[table.Key]int64{}, map[string]map[string]int64{}, map[string]*meter.Meter{}
	}
	k.n[key]++
	kind := crawlstate.KindOf(key)
	if k.byFn[fn] == nil {
		k.byFn[fn] = map[string]int64{}
	}
	k.byFn[fn][kind]++
	if k.units[kind] == nil {
		k.units[kind] = meter.New()
	}
	return meter.WithAccount(ctx, k.units[kind])
}

// writeUnits returns the write units the meter counted for each kind of item's writes.
func (k *keyWrites) writeUnits() map[string]float64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]float64{}
	for kind, m := range k.units {
		out[kind] = m.Snapshot().DynamoDBWriteUnits
	}
	return out
}

// of returns the table as the function fn writes it, its writes counted as fn's too.
func (k *keyWrites) of(fn string) table.Table { return fnWrites{Table: k.t, k: k, fn: fn} }

// kindByFunction returns each function's writes to items of the kind.
func (k *keyWrites) kindByFunction(kind string) map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int64{}
	for fn, kinds := range k.byFn {
		if n := kinds[kind]; n > 0 {
			out[fn] = n
		}
	}
	return out
}

// fnWrites is the table of one function: keyWrites that also knows whose writes they are.
type fnWrites struct {
	table.Table // the table itself: reads pass through
	k           *keyWrites
	fn          string
}

func (f fnWrites) Put(ctx context.Context, key table.Key, it table.Item, c table.Cond) error {
	return f.Table.Put(f.k.count(ctx, f.fn, key), key, it, c)
}

func (f fnWrites) Update(ctx context.Context, key table.Key, u table.Update, c table.Cond) (table.Item, error) {
	return f.Table.Update(f.k.count(ctx, f.fn, key), key, u, c)
}

func (f fnWrites) Delete(ctx context.Context, key table.Key, c table.Cond) error {
	return f.Table.Delete(f.k.count(ctx, f.fn, key), key, c)
}

// perHost reports whether key is an item of one host: its politeness slot or its budget in a
// crawl. Their writes are bounded by the host's rate.
func perHost(key table.Key) bool {
	kind := crawlstate.KindOf(key)
	return kind == "slot" || kind == "host budget"
}

// byKind returns the writes by kind of item, as the table's keys tell them (crawlstate.KindOf).
func (k *keyWrites) byKind() map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int64{}
	for key, n := range k.n {
		out[crawlstate.KindOf(key)] += n
	}
	return out
}

// hottestOf returns the item of the kind (see crawlstate.KindOf) that took the most writes.
func (k *keyWrites) hottestOf(kind string) (key string, n int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for kk, nn := range k.n {
		if crawlstate.KindOf(kk) == kind && nn > n {
			key, n = kk.String(), nn
		}
	}
	return key, n
}

// hottest returns the per-host item and the other item that took the most writes.
func (k *keyWrites) hottest() (host string, hostN int64, other string, otherN int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, n := range k.n {
		switch {
		case perHost(key) && n > hostN:
			host, hostN = key.String(), n
		case !perHost(key) && n > otherN:
			other, otherN = key.String(), n
		}
	}
	return host, hostN, other, otherN
}

// fetchSends counts the fetch messages: those sent with a delay (to wait for a politeness slot
// booked at admission, or re-sent to wait again), the re-sends, which are the sends of a URL's
// message after its first, and the first sends: how many messages, URLs and groups (the
// fetcher claims a message's URLs of a group in one write: crawlstate.ClaimGroup).
type fetchSends struct {
	queue.Sender
	queues  []string // fetch's, and the slow lane's
	delayed atomic.Int64
	mu      sync.Mutex
	sends   map[string]int64 // URL -> its fetch messages sent
	// firstMsgs and firstURLs count the messages that carried their URLs for the first time, and
	// groups their groups.
	firstMsgs, firstURLs int64
	groups               map[string]bool
	// lone counts the first messages to the slow lane of several hosts' URLs: polite hosts' lone
	// URLs packed together (shared/crawl/frontier/groups.go), where a run is one host's.
	lone int64
}

func (d *fetchSends) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	err := d.Sender.SendBatch(ctx, q, entries)
	if !slices.Contains(d.queues, q) {
		return err
	}
	var be *queue.BatchError
	errors.As(err, &be)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sends == nil {
		d.sends = map[string]int64{}
	}
	for _, e := range entries {
		if (err != nil && be == nil) || (be != nil && be.Failed[e.ID] != nil) {
			continue // not sent
		}
		if e.Delay > 0 {
			d.delayed.Add(1)
		}
		if m, derr := message.DecodeFetch(e.Body); derr == nil {
			parts := m.Split()
			if d.sends[parts[0].URL] == 0 {
				if d.groups == nil {
					d.groups = map[string]bool{}
				}
				d.firstMsgs, d.firstURLs, d.groups[parts[0].Group] = d.firstMsgs+1, d.firstURLs+int64(len(parts)), true
				if q == d.queues[len(d.queues)-1] && severalHosts(parts) {
					d.lone++
				}
			}
			for _, p := range parts {
				d.sends[p.URL]++
			}
		}
	}
	return err
}

// first returns the messages that carried their URLs for the first time, those URLs, their
// groups, and those of the messages that the slow lane took with several hosts' lone URLs.
func (d *fetchSends) first() (msgs, urls, groups, lone int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.firstMsgs, d.firstURLs, int64(len(d.groups)), d.lone
}

// severalHosts reports whether a fetch message's URLs are of more than one host.
func severalHosts(parts []*message.Fetch) bool {
	for _, p := range parts[1:] {
		if hostOf(p.URL) != hostOf(parts[0].URL) {
			return true
		}
	}
	return false
}

// hostOf is the host of a URL the frontier sent (normalized: it parses).
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}

// resent is how many fetch messages were sent for a URL that had one already.
func (d *fetchSends) resent() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n int64
	for _, c := range d.sends {
		n += c - 1
	}
	return n
}

// earlyEmpty counts the runner's receives that came back empty before their long poll's wait
// was over. SQS answers a long poll with nothing only once its wait time has passed ("Amazon SQS
// short and long polling" in the SQS developer guide); fauxqs answers every waiting receive of a
// queue as soon as a message arrives, one with the message and the rest empty, so a poller waiting
// on a busy queue sends a receive for nearly every message that others take. Those receives would
// not be made against SQS, and are taken out of the bill.
type earlyEmpty struct {
	mu      sync.Mutex
	byQueue map[string]int64
}

// earlySlack is how much sooner than its wait an empty answer may come and still count as a
// wait that ran out (the wait is in whole seconds on the wire).
const earlySlack = 250 * time.Millisecond

func (e *earlyEmpty) wrap(q localrun.Queues) localrun.Queues { return earlyQueues{Queues: q, e: e} }

type earlyQueues struct {
	localrun.Queues
	e *earlyEmpty
}

func (q earlyQueues) Receive(ctx context.Context, name string, max int, visibility, wait time.Duration) ([]queue.Message, error) {
	start := time.Now()
	msgs, err := q.Queues.Receive(ctx, name, max, visibility, wait)
	if err == nil && len(msgs) == 0 && ctx.Err() == nil && wait >= time.Second && time.Since(start) < wait-earlySlack {
		q.e.mu.Lock()
		if q.e.byQueue == nil {
			q.e.byQueue = map[string]int64{}
		}
		q.e.byQueue[name]++
		q.e.mu.Unlock()
	}
	return msgs, err
}

// takeFrom takes the early empty receives out of u and calls, and returns how many there were.
func (e *earlyEmpty) takeFrom(u *cost.Units, calls map[string]int64) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for q, k := range e.byQueue {
		n += k
		call := "ReceiveMessage " + q[strings.LastIndexAny(q, "/-")+1:]
		calls[call] = max(calls[call]-k, 0)
	}
	u.SQSRequests = max(u.SQSRequests-n, 0)
	return n
}

// depthUnmetered is the runner's queues with their depth read, and their messages' visibility
// changed, on an unmetered client. The runner looks at the queues' depths to find the end of the
// crawl, and keeps the batches in hand invisible with a heartbeat (and gives back at once those it
// will not handle as it stops), none of which an event source mapping does: the stack's
// visibility timeout is six times its function's timeout, so Lambda never extends it. Those
// requests are no part of what the stack would pay. Its receives and deletes are the mapping's,
// and are metered.
type depthUnmetered struct {
	localrun.Queues
	depth localrun.Queues
}

func (d depthUnmetered) Depth(ctx context.Context, q string) (int, int, error) {
	return d.depth.Depth(ctx, q)
}

func (d depthUnmetered) ChangeVisibility(ctx context.Context, q, receipt string, timeout time.Duration) error {
	return d.depth.ChangeVisibility(ctx, q, receipt, timeout)
}

// logBytes is the handlers' log destination: it meters the bytes CloudWatch Logs would ingest.
type logBytes struct{ m *meter.Meter }

func (l *logBytes) Write(p []byte) (int, error) {
	l.m.AddLogBytes(len(p))
	return len(p), nil
}

// emfSeries is the writer of the functions' EMF metric lines (observe/telemetry's EMF exporter,
// flushed after each invocation as a Lambda function flushes it): their bytes are log bytes,
// which CloudWatch Logs ingests, and the series they name are what CloudWatch bills, each for
// every hour in which it receives a value (a series with nothing to say in an hour is written no
// line: a zero sum is left out).
type emfSeries struct {
	m     *meter.Meter
	start time.Time

	mu    sync.Mutex
	hours map[int]map[string]bool // hour of the crawl -> series named in it
}

func newEMFSeries(m *meter.Meter, start time.Time) *emfSeries {
	return &emfSeries{m: m, start: start, hours: map[int]map[string]bool{}}
}

// Write takes one EMF line (the exporter writes each line with one call).
func (e *emfSeries) Write(p []byte) (int, error) {
	e.m.AddLogBytes(len(p))
	var doc struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name string }
			}
		} `json:"_aws"`
	}
	if err := json.Unmarshal(p, &doc); err != nil {
		return 0, fmt.Errorf("costrun: an EMF line that is not JSON: %w", err)
	}
	hour := int(time.Since(e.start) / time.Hour)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hours[hour] == nil {
		e.hours[hour] = map[string]bool{}
	}
	for _, d := range doc.AWS.CloudWatchMetrics {
		for _, m := range d.Metrics {
			// A series is a namespace, a name and the dimensions' values (the crawl's have none).
			e.hours[hour][d.Namespace+"|"+m.Name+"|"+fmt.Sprint(d.Dimensions)] = true
		}
	}
	return len(p), nil
}

// seriesHours are the series-hours of the crawl until end, each hour's series pro-rated by the
// part of the hour the crawl ran in (as cost.MetricSeriesHours does), and the most series any
// hour named.
func (e *emfSeries) seriesHours(end time.Time) (hours float64, most int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	elapsed := end.Sub(e.start)
	for h, names := range e.hours {
		part := min(elapsed-time.Duration(h)*time.Hour, time.Hour)
		hours += cost.MetricSeriesHours(len(names), part)
		most = max(most, len(names))
	}
	return hours, most
}

// batchTally counts each function's invocations and the records they were given.
type batchTally struct {
	mu sync.Mutex
	by map[string]Batches
}

// add counts one invocation of fn with records records, which took gbs GB-seconds.
func (b *batchTally) add(fn string, records int, gbs float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[string]Batches{}
	}
	n := b.by[fn]
	n.Invocations++
	n.Records += int64(records)
	n.GBSeconds += gbs
	b.by[fn] = n
}

// counts are the counts so far.
func (b *batchTally) counts() map[string]Batches {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[string]Batches{}
	}
	return b.by
}
