// Package samples holds the project's sample Lambda events: real-shaped JSON documents, as AWS
// delivers them, for the handler tests and for `crawl invoke` (see docs/events.md).
//
//   - s3-put-seed.json: an S3 ObjectCreated:Put notification for "seeds/my seeds.txt", wrapped in
//     an SQS event as S3 delivers it to the schedule queue (the key URL-encoded: seeds/my+seeds.txt);
//   - s3-test-event.json: the SQS event carrying S3's s3:TestEvent message;
//   - sqs-links.json, sqs-fetch.json, sqs-parse.json: SQS batches of the project's messages;
//   - sqs-links-with-poison.json: a links batch with one malformed body in the middle;
//   - eventbridge-tick.json: an EventBridge "Scheduled Event" (the re-crawl rule).
//
// The URLs in the samples are on example.test, which never resolves: a test that fetches them
// serves them itself and rewrites the host (see Rewrite).
//
// The folder is events/, where the project's layout puts sample events; the package is named
// samples so that it never shadows aws-lambda-go's events package, whose types the samples decode
// into.
package samples

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// BlobsDir is the folder, beside the samples, of the bucket objects they make their handlers
// read: the seed file of s3-put-seed.json (and of the re-crawl tick), and the WARC record of
// sqs-parse.json. `crawl invoke` puts them into an embedded state's bucket, so that every sample
// runs as it is.
const BlobsDir = "blobs"

// SampleHost is the origin every sample URL is on.
const SampleHost = "http://example.test"

// Names of the sample files.
const (
	S3PutSeed          = "s3-put-seed.json"
	S3TestEvent        = "s3-test-event.json"
	SQSLinks           = "sqs-links.json"
	SQSLinksWithPoison = "sqs-links-with-poison.json"
	SQSFetch           = "sqs-fetch.json"
	SQSParse           = "sqs-parse.json"
	EventBridgeTick    = "eventbridge-tick.json"
)

// FS holds the sample files.
//
//go:embed *.json
var FS embed.FS

// Read returns the named sample file.
func Read(name string) ([]byte, error) {
	b, err := FS.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("sample event %s: %w", name, err)
	}
	return b, nil
}

// Rewrite returns the sample with every SampleHost URL moved to origin (such as an httptest
// server's URL), so a test can serve the sample's pages itself.
func Rewrite(sample []byte, origin string) []byte {
	return []byte(strings.ReplaceAll(string(sample), SampleHost, strings.TrimSuffix(origin, "/")))
}

// SQS returns the named sample as an SQS event.
func SQS(name string) (events.SQSEvent, error) {
	var ev events.SQSEvent
	b, err := Read(name)
	if err != nil {
		return ev, err
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, fmt.Errorf("sample event %s: %w", name, err)
	}
	return ev, nil
}
