package crawlstack

// FunctionConfig sizes one Lambda function and the SQS event source mapping
// that feeds it.
type FunctionConfig struct {
	// TimeoutSeconds is the function timeout. The queue's visibility timeout
	// is derived from it (6x, plus the batching window), as AWS recommends
	// for SQS event sources.
	TimeoutSeconds int
	// MemoryMB is the function memory; CPU scales with it.
	MemoryMB int
	// MaxConcurrency caps concurrent invocations by the event source mapping
	// (2 to 1000). It is the crawler's throttle: it limits load on the table
	// and, for fetch, on the crawled sites.
	MaxConcurrency int
	// BatchSize is the most SQS messages per invocation: 1 to 10,000 on a
	// standard queue, and above 10 only with a batching window of at least
	// 1 second (see [maxBatchSize]). The mapping also ends a batch when its
	// records reach Lambda's 6 MB invocation payload, whatever the size.
	BatchSize int
	// BatchWindowSeconds is how long the mapping gathers records before it
	// invokes the function, counted from the first record (0 to 300). The
	// records wait in flight meanwhile, so the queue's visibility timeout
	// covers it too (see [VisibilityTimeoutSeconds]).
	BatchWindowSeconds int
	// BatchConcurrency is how many records of one batch the handler works on
	// at once (CRAWL_BATCH_CONCURRENCY). For fetch it is the GETs in flight:
	// a batch takes about BatchSize/BatchConcurrency page loads, plus its
	// politeness waits.
	BatchConcurrency int
}

// Limits of an SQS event source mapping on a standard queue. The Lambda API
// reference (CreateEventSourceMapping, BatchSize and
// MaximumBatchingWindowInSeconds; "Lambda parameters for Amazon SQS event
// source mappings" in the Lambda developer guide) says: BatchSize is at most
// 10,000 for standard queues (10 for FIFO), and "when you set BatchSize to a
// value greater than 10, you must set MaximumBatchingWindowInSeconds to at
// least 1"; the window is 0 to 300 seconds.
const (
	maxBatchSize         = 10_000
	maxUnwindowedBatch   = 10
	maxBatchWindowSecond = 300
)

// VisibilityTimeoutSeconds is the visibility timeout of the function's queue:
// 6 times the function timeout, as AWS recommends for SQS event sources, plus
// the batching window, during which the first records of a batch are already
// in flight while the mapping gathers the rest.
func (f FunctionConfig) VisibilityTimeoutSeconds() int {
	return visibilityFactor*f.TimeoutSeconds + f.BatchWindowSeconds
}

// DefaultFunctions returns the default sizes of the three functions. shared/bench/costrun
// (in the root module, which cannot import this one) meters a crawl with the
// same settings: testdata/function-defaults.json is the copy both modules'
// tests hold their defaults against.
//
// Schedule and parse take batches of 100: a batch, not a page, costs an
// invocation, a records file (an S3 PUT), a SendMessageBatch of link or fetch
// messages and a DeleteMessageBatch. `make cost` measured batches of at most
// 10 at 0.87 invocations and 0.51 S3 PUTs per page (docs/cost.md). 100 small
// messages are far below the 6 MB invocation payload: a parse message is
// under 1 KB, a links message at most about 25 KB.
//
// Fetch takes batches of 100 gathered for up to 2 s, all worked on at once.
// Schedule books each fetch message's politeness slot as it admits the URL
// and sends the message back CRAWL_SLOT_LEAD (the fetch window) before its
// slot, so the window does not make it late; the records of a batch wait for
// their own slots side by side. `make cost` measured the wide crawl at $5.21
// per million pages this way (before the log level and early-receive changes) (WARC files of 25 pages, 0.07 re-sends a page);
// with batches of 10 and no window before slots were booked, $12.28. Batches
// of 100 with a 3 s window and no booking cost $27.03: a message that came
// back for its slot was held past it and had to wait again.
//
// Fetch and parse each run at most 2 invocations at once (the event source
// mapping's least maximum concurrency): fewer, fuller batches. A wide crawl's
// fetch messages trickle in as their slots come due, so 10 concurrent batches
// each gathered a tenth of them and waited out the same slots side by side;
// at 2 (with schedule's spare slots), `make cost` measured the wide crawl's
// Lambda at $0.17 per million pages against $0.43-0.53, its WARC files (S3
// PUTs) at about 110 pages each against about 30, and the crawl no slower
// (docs/cost.md). With a maximum concurrency set, the
// mapping stops reading the queue while its invocations are busy, so nothing
// is throttled back to the queue. Two fetch invocations of 100 GETs in flight
// carry about 1,000 pages a second at 200 ms a page; raise
// fetchMaxConcurrency for a crawl of more hosts than that.
func DefaultFunctions() map[string]FunctionConfig {
	return map[string]FunctionConfig{
		FnSchedule: {TimeoutSeconds: 60, MemoryMB: 256, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 10},
		FnFetch:    {TimeoutSeconds: 120, MemoryMB: 512, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 100},
		FnParse:    {TimeoutSeconds: 60, MemoryMB: 512, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 10},
		// The slow lane (slowlane.go), with runUrls of 2 or more.
		FnFetchSlow: DefaultFetchSlowFunction(),
	}
}

// Function returns the settings of the named function.
func (c Config) Function(name string) FunctionConfig {
	switch name {
	case FnSchedule:
		return c.Schedule
	case FnFetch:
		return c.Fetch
	case FnRender:
		return c.RenderFunction
	case FnFetchSlow:
		return c.FetchSlow
	default:
		return c.Parse
	}
}
