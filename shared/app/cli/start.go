package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// Starting a crawl as the stack does: the seed file dropped under seeds/ and schedule told of it
// with the S3 notification that S3 would send.

// StartCrawl drops the seed file into seeds/ and tells schedule, as S3 would. The crawl is named
// after the file's content, so starting the same file again resumes its crawl.
func StartCrawl(ctx context.Context, be *Backend, res Resources, name string, body []byte) (string, error) {
	key, version := seedObject(be, name, body)
	if err := startSeed(ctx, be, res, key, version, body); err != nil {
		return "", err
	}
	return scheduler.CrawlID(be.Bucket, key, version), nil
}

// startSeed stores the seed file body at key and sends schedule the S3 notification of that
// version of it.
func startSeed(ctx context.Context, be *Backend, res Resources, key, version string, body []byte) error {
	if err := be.Blobs.Put(ctx, key, body, "text/plain"); err != nil {
		return fmt.Errorf("store the seed file: %w", err)
	}
	note, err := s3Notification(be.Bucket, key, version, int64(len(body)))
	if err != nil {
		return err
	}
	// The seed's send is where a crawl's trace starts (package telemetry).
	if err := (telemetry.Sender{Next: be.Queue}).SendBatch(ctx, res.Schedule, []queue.Entry{{ID: "seed", Body: note}}); err != nil {
		return fmt.Errorf("start the crawl: %w", err)
	}
	return nil
}

// crawlOf is the id of the crawl that StartCrawl starts for a seed file of that name and body.
func crawlOf(be *Backend, name string, body []byte) string {
	key, version := seedObject(be, name, body)
	return scheduler.CrawlID(be.Bucket, key, version)
}

// seedObject is the key of the seed file name in be, and the version S3 would give its body: the
// digest of its seed lines, so that comments, blank lines and spaces around a URL do not make
// another crawl of the same seeds.
func seedObject(be *Backend, name string, body []byte) (key, version string) {
	digest := sha256.Sum256(seedLines(body))
	prefix := be.SeedsPrefix
	if prefix == "" {
		prefix = layout.Seeds
	}
	return prefix + name, hex.EncodeToString(digest[:])
}

// namedObject is the key and version of a crawl named by --name: the name alone decides the crawl,
// whatever the seed file holds.
func namedObject(be *Backend, name string) (key, version string) {
	prefix := be.SeedsPrefix
	if prefix == "" {
		prefix = layout.Seeds
	}
	return prefix + "named/" + name, "named"
}

// seedLines is body without the lines a seed file ignores (blank lines and # comments), each line
// trimmed and ended by "\n": the same bytes as body for a file without them.
func seedLines(body []byte) []byte {
	var out []byte
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(append(out, line...), '\n')
	}
	return out
}

// s3Notification is the S3 ObjectCreated event, wrapped as S3 sends it to SQS.
func s3Notification(bucket, key, sequencer string, size int64) (string, error) {
	ev := events.S3Event{Records: []events.S3EventRecord{{
		EventVersion: "2.1", EventSource: "aws:s3", AWSRegion: "local", EventTime: time.Now().UTC(),
		EventName: "ObjectCreated:Put",
		S3: events.S3Entity{SchemaVersion: "1.0", Bucket: events.S3Bucket{Name: bucket, Arn: "arn:aws:s3:::" + bucket},
			Object: events.S3Object{Key: escapeKey(key), Size: size, Sequencer: sequencer}},
	}}}
	b, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("build the s3 notification: %w", err)
	}
	return string(b), nil
}

// escapeKey URL-encodes an object key the way S3 notifications do ('+' for a space, '/' kept).
func escapeKey(key string) string {
	return strings.ReplaceAll(url.QueryEscape(key), "%2F", "/")
}
