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
