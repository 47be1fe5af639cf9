// Package faultproxy is a fault-injecting HTTP proxy between the AWS SDK and the local AWS
// emulators (DynamoDB Local, fauxqs for SQS, gofakes3 for S3), for the integration tests. It puts
// faults below the client, where AWS puts them, so that the SDK's own retryer meets them: a write
// that is applied and whose answer is lost is replayed by the SDK, which a fake that fails before
// the call never shows.
//
// A Proxy listens on one loopback port per service. Point the SDK at it as at the emulators
// (Proxy.Env gives the AWS_ENDPOINT_URL_* variables). Every request is forwarded to the emulator
// unless its fault says otherwise. The fault kinds:
//
//   - ApplyDrop: the write is applied, then the connection is closed without an answer.
//   - Apply500: the write is applied, then the answer is a 500 in the service's own error shape.
//     On an S3 PUT this is "the PUT failed after the object was written".
//   - Throttle: the request is not applied; the answer is DynamoDB's 400
//     ProvisionedThroughputExceededException or ThrottlingException, S3's 503 SlowDown, or SQS's
//     400 RequestThrottled. aws-sdk-go-v2's retryer counts every one of these codes as a
//     throttle, which it retries (retry.DefaultThrottleErrorCodes).
//   - Delay: the request is applied and its answer held for Schedule.Delay (or until the client
//     gives up): past the client's timeout, the SDK replays a request that was applied.
//   - DupInReceive: one message of an SQS ReceiveMessage answer is in the answer twice, with the
//     same MessageId and receipt handle.
//   - DupLater: a copy of one message of a ReceiveMessage answer is kept and put into a later
//     answer of a receive from the same queue, while the original is still invisible (neither
//     deleted nor made visible again, and within its visibility timeout). The copy carries the
//     original's receipt handle (the proxy cannot make a new one).
//
// The writes are DynamoDB's PutItem, UpdateItem, DeleteItem, BatchWriteItem and
// TransactWriteItems; S3's PutObject (and CopyObject, UploadPart), DeleteObject and DeleteObjects;
// SQS's SendMessage(Batch), DeleteMessage(Batch) and ChangeMessageVisibility(Batch). Throttle and
// Delay also hit the reads of the data plane (GetItem, Query, Scan, GetObject, ListObjects,
// ReceiveMessage, GetQueueAttributes ...). Set-up calls (CreateTable, CreateQueue, CreateBucket
// ...) are never faulted.
//
// The schedule is seeded: the n-th request that can take a fault gets the fault that (Seed, n)
// and the rates decide, in every run. Which request is the n-th depends on the order in which
// the clients send them, which concurrency varies; so a failing test names its faults by the log
// (Proxy.Faults, Proxy.Report), which gives for each the seed, the sequence number, the service,
// the operation, the kind and the table, key, bucket, object or queue it hit. Proxy.Counts counts
// them by kind.
//
// An observer (WithObserver) sees every request the emulators applied, with the time its answer
// came back: tests use it as an oracle of their own for what reached the emulators and when.
//
// TestIntegrationChaosCrawl, beside the proxy's own tests, runs `crawl run --backend aws` through
// it with every fault kind at a few per cent, over 5 seeds (docs/localstack.md).
package faultproxy
