// Package cost is the crawl's cost model: the units that AWS bills a crawl for (Units), the list
// prices that turn them into dollars (Prices, Cost), and the counters that keep a crawl's bill in
// the state table (Units.Counters, UnitsFromCounters). It is plain arithmetic with no AWS
// dependency: observe/meter counts the units from the SDK's requests, and the crawl domain keeps
// and budgets them. docs/cost.md says more, with the sources of the prices.
package cost

import "time"

// Units are the billed units counted so far. The zero value is no usage.
type Units struct {
	// SQSRequests are SQS requests, one per started 64 KiB chunk of a call's payload.
	SQSRequests int64
	// DynamoDBReadUnits are on-demand read request units (an eventually consistent read of up
	// to 4 KB is 0.5).
	DynamoDBReadUnits float64
	// DynamoDBWriteUnits are on-demand write request units, failed conditional writes included.
	DynamoDBWriteUnits float64
	// DynamoDBUnmetered counts successful DynamoDB data-plane calls whose answer carried no
	// ConsumedCapacity; they add no units, so a non-zero count means the units are too low.
	DynamoDBUnmetered int64
	// S3ClassA are S3 PUT, COPY, POST and LIST requests.
	S3ClassA int64
	// S3ClassB are S3 GET, HEAD and other non-free requests.
	S3ClassB int64
	// LambdaRequests are Lambda invocations.
	LambdaRequests int64
	// LambdaGBSeconds is billed Lambda duration (rounded up to the millisecond) times memory.
	LambdaGBSeconds float64
	// LogBytes are bytes ingested by CloudWatch Logs.
	LogBytes int64
	// MetricSeriesHours are custom metric series-hours: CloudWatch bills a series by the month,
	// pro-rated by the hour, in each hour it receives data (MetricSeriesHours, the function).
	MetricSeriesHours float64
}

// Add returns u plus v, item by item.
func (u Units) Add(v Units) Units {
	return Units{
		SQSRequests:        u.SQSRequests + v.SQSRequests,
		DynamoDBReadUnits:  u.DynamoDBReadUnits + v.DynamoDBReadUnits,
		DynamoDBWriteUnits: u.DynamoDBWriteUnits + v.DynamoDBWriteUnits,
		DynamoDBUnmetered:  u.DynamoDBUnmetered + v.DynamoDBUnmetered,
		S3ClassA:           u.S3ClassA + v.S3ClassA,
		S3ClassB:           u.S3ClassB + v.S3ClassB,
		LambdaRequests:     u.LambdaRequests + v.LambdaRequests,
		LambdaGBSeconds:    u.LambdaGBSeconds + v.LambdaGBSeconds,
		LogBytes:           u.LogBytes + v.LogBytes,
		MetricSeriesHours:  u.MetricSeriesHours + v.MetricSeriesHours,
	}
}

// Sub returns u minus v, item by item: the usage between two snapshots when v is the earlier.
func (u Units) Sub(v Units) Units {
	return Units{
		SQSRequests:        u.SQSRequests - v.SQSRequests,
		DynamoDBReadUnits:  u.DynamoDBReadUnits - v.DynamoDBReadUnits,
		DynamoDBWriteUnits: u.DynamoDBWriteUnits - v.DynamoDBWriteUnits,
		DynamoDBUnmetered:  u.DynamoDBUnmetered - v.DynamoDBUnmetered,
		S3ClassA:           u.S3ClassA - v.S3ClassA,
		S3ClassB:           u.S3ClassB - v.S3ClassB,
		LambdaRequests:     u.LambdaRequests - v.LambdaRequests,
		LambdaGBSeconds:    u.LambdaGBSeconds - v.LambdaGBSeconds,
		LogBytes:           u.LogBytes - v.LogBytes,
		MetricSeriesHours:  u.MetricSeriesHours - v.MetricSeriesHours,
	}
}

// LambdaGBSeconds is the billed compute of one invocation: whole milliseconds (rounded up, at
// least one) times memory in GB (1 GB = 1024 MB, as Lambda's memory setting counts).
func LambdaGBSeconds(d time.Duration, memoryMB int) float64 {
	if memoryMB <= 0 {
		return 0
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	if ms < 1 {
		ms = 1
	}
	return float64(ms) / 1000 * float64(memoryMB) / 1024
}

// How an SQS event source mapping polls its queue, as AWS runs it. With maximum concurrency set
// (the stack sets it on every mapping) Lambda keeps PollersPerQueue pollers on the queue, each
// long-polling PollWait at a time and taking up to MessagesPerReceive messages a receive; it
// deletes a batch's successes with DeleteMessageBatch, MessagesPerReceive at a time. ("Configuring
// scaling behavior for SQS event source mappings" in the Lambda developer guide: the optimisation
// to as few as 2 pollers is not available when maximum concurrency is set.)
const (
	PollersPerQueue    = 5
	PollWait           = 20 * time.Second
	MessagesPerReceive = 10
)

// BatchRequests is what an event source mapping spends in SQS requests on one batch of records,
// of which deleted succeeded: the receives that gathered the records, MessagesPerReceive at most
// each, and unless the batch was full the one more that found nothing left in its batching window
// (the mapping keeps receiving until the window ends); and the deletes of the successes,
// MessagesPerReceive a request. The function never sees these calls, so the ledger books them
// from this model.
func BatchRequests(records, deleted int, full bool) int64 {
	per := func(n int) int64 { return int64((max(n, 0) + MessagesPerReceive - 1) / MessagesPerReceive) }
	n := per(records) + per(deleted)
	if records > 0 && !full {
		n++
	}
	return n
}

// IdleReceives is what pollers long-polling empty queues spend in d: one receive per poller every
// PollWait. A deployed stack's three mappings cost IdleReceives(3, PollersPerQueue, d) with no
// crawl running (15 receives a minute a queue); the dead-letter queues have no mapping and no
// poller.
func IdleReceives(queues, pollers int, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(queues) * int64(pollers) * int64((d+PollWait-1)/PollWait)
}

// MaxPollGap bounds the time between two batches of a queue over which PollerReceives books the
// pollers' empty receives. A queue that went longer without a batch was idle, which the stack's
// idle bill (IdleReceives) already counts; the bound also keeps the gap since a crawl of the day
// before off the next crawl's first batch.
const MaxPollGap = 5 * time.Minute

// PollerReceives is what pollers polling a queue with receives that wait up to wait (PollWait on
// AWS) spend, as expected, in receives that find nothing over gap, the time between the starts
// of two of the queue's batches: each poller's wait runs out once every wait while no message
// comes, so pollers x gap / wait, with gap bounded by MaxPollGap. It is a fraction: a caller adds
// it up and books the whole receives. The receives that return messages and the one that ends a
// batching window are BatchRequests', not these.
func PollerReceives(pollers int, wait, gap time.Duration) float64 {
	if pollers <= 0 || wait <= 0 || gap <= 0 {
		return 0
	}
	return float64(pollers) * float64(min(gap, MaxPollGap)) / float64(wait)
}

// MetricSeriesHours is what series custom metric series cost a crawl of pages pages that took
// elapsed, in series-hours, at the crawl's rate: series x elapsed, the hours a crawl at that rate
// takes for its pages (a million pages take 1e6 / pages-per-hour hours). It is the pro-rated
// share, not the whole clock hours a sample touches: a sample of 6 minutes billed a whole hour of
// each series would say more about the sample's length than about a page. The series have no
// dimension, so the crawls that run at once share them: a crawl running alone pays them all.
func MetricSeriesHours(series int, elapsed time.Duration) float64 {
	if series <= 0 || elapsed <= 0 {
		return 0
	}
	return float64(series) * elapsed.Hours()
}
