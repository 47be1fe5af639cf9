// Package meter counts the units that AWS bills a crawl for (cost.Units), from the requests the
// code really makes: it is the AWS SDK side of the cost model in shared/crawl/cost.
//
// A Meter is middleware on the aws-sdk-go-v2 clients (Register or APIOption) plus an account of
// Lambda invocations (AddLambda) and log bytes (AddLogBytes). Per operation it counts:
//
//   - SQS: one request per started 64 KiB of payload. SendMessage and SendMessageBatch count the
//     bodies and message (and system) attributes they send, a batch's summed together;
//     ReceiveMessage the bodies and message attributes it returns; every other call counts one.
//     An error answer counts too: SQS bills API requests, and no exception for errors was found.
//   - DynamoDB: the read and write request units of the answer's ConsumedCapacity. The meter sets
//     ReturnConsumedCapacity=TOTAL on every data-plane input that left it unset (on a copy: the
//     caller's input is not changed). A failed conditional write (ConditionalCheckFailedException,
//     or a TransactionCanceledException of TransactWriteItems whose reasons name a failed
//     condition) carries no ConsumedCapacity but is billed, so the meter counts it itself: one
//     write unit per started KB of the larger of the item sent (PutItem) and the old item the
//     error returned (ReturnValuesOnConditionCheckFailure=ALL_OLD), and at least one; twice that
//     per item of a transaction. Item sizes follow DynamoDB's published size rules and are
//     approximate for numbers. Every other error counts zero (a throttled request is not billed).
//     A successful answer without ConsumedCapacity (the caller asked for NONE, or an emulator
//     omits it) counts zero units and one in Units.DynamoDBUnmetered, so the gap is visible.
//   - S3: class A (PUT, COPY, POST, LIST) and class B (GET, HEAD and all others) requests.
//     DELETE requests and AbortMultipartUpload are free. S3 bills 4xx answers but not 5xx ones,
//     and the meter does the same (it also counts the few 4xx authorization errors that S3
//     lists as free, which the crawler's own signed requests should never get).
//   - Other services: nothing.
//
// Every attempt the SDK makes is counted on its own (a retried request is billed again), and an
// attempt that got no HTTP answer counts nothing. cost.Prices turn the Units into dollars.
// docs/cost.md says more, with the sources of the prices.
package meter

import (
	"fmt"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
)

// Meter accumulates Units. It is safe for concurrent use; the zero value is ready to use.
type Meter struct {
	mu    sync.Mutex
	units cost.Units
	calls map[string]int64 // SQS requests by call and queue (see SQSCalls)
}

// New returns an empty Meter.
func New() *Meter { return &Meter{} }

// Snapshot returns the units counted so far.
func (m *Meter) Snapshot() cost.Units {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.units
}

// SQSCalls returns the SQS requests counted so far by what made them: the operation and the
// last part of the queue's name, such as "ReceiveMessage fetch".
func (m *Meter) SQSCalls() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.calls))
	for k, v := range m.calls {
		out[k] = v
	}
	return out
}

func (m *Meter) addCall(call string, n int64) {
	m.mu.Lock()
	if m.calls == nil {
		m.calls = map[string]int64{}
	}
	m.calls[call] += n
	m.mu.Unlock()
}

// add counts u.
func (m *Meter) add(u cost.Units) {
	m.mu.Lock()
	m.units = m.units.Add(u)
	m.mu.Unlock()
}

// AddLambda counts one Lambda invocation that ran for d with memoryMB of memory. Lambda bills
// the duration rounded up to the millisecond; the meter bills at least 1 ms.
func (m *Meter) AddLambda(d time.Duration, memoryMB int) {
	m.add(cost.Units{LambdaRequests: 1, LambdaGBSeconds: cost.LambdaGBSeconds(d, memoryMB)})
}

// AddSQSRequests counts n SQS requests made where no client of the meter sees them: an event
// source mapping's receives and deletes (cost.BatchRequests).
func (m *Meter) AddSQSRequests(n int64) {
	if n > 0 {
		m.add(cost.Units{SQSRequests: n})
	}
}

// AddLogBytes counts n bytes ingested by CloudWatch Logs. A negative n counts nothing.
func (m *Meter) AddLogBytes(n int) {
	if n <= 0 {
		return
	}
	m.add(cost.Units{LogBytes: int64(n)})
}

// Register installs the meter's middleware on every client that is built from cfg afterwards.
// Registering the same meter again changes nothing; a client that carries two different meters
// fails every call (see APIOption).
func (m *Meter) Register(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, m.APIOption)
}

// APIOption installs the meter's middleware on one operation stack. Append it to a client's
// Options.APIOptions to meter only that client. It installs m once however often it runs, so no
// call is counted twice; a stack that already carries another meter is an error, since one of
// the two would miss its counts.
func (m *Meter) APIOption(stack *middleware.Stack) error {
	if mw, ok := stack.Deserialize.Get(deserializeID); ok {
		if d, same := mw.(deserializeMiddleware); same && d.m == m {
			return nil
		}
		return fmt.Errorf("meter: another meter is already installed on %s", stack.ID())
	}
	if err := stack.Initialize.Add(initializeMiddleware{}, middleware.After); err != nil {
		return fmt.Errorf("meter: add %s: %w", initializeID, err)
	}
	if err := stack.Deserialize.Add(deserializeMiddleware{m: m}, middleware.Before); err != nil {
		return fmt.Errorf("meter: add %s: %w", deserializeID, err)
	}
	return nil
}
