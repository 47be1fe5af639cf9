// Package awsports builds the AWS adapters of the queue, table and blob ports from one SDK
// configuration: what the Lambda mains and `crawl run --backend aws` share. Clients are built once
// per process (per Lambda container), at init.
package awsports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/crawlstack/crawlstack/shared/awsconfig"
	"github.com/crawlstack/crawlstack/shared/dynamotable"
	"github.com/crawlstack/crawlstack/shared/meter"
	"github.com/crawlstack/crawlstack/shared/pipeline"
	"github.com/crawlstack/crawlstack/shared/s3blob"
	"github.com/crawlstack/crawlstack/shared/sqsqueue"
)

// Ports are the AWS adapters.
type Ports struct {
	Queue *sqsqueue.Queue
	Table *dynamotable.Table
	Blobs *s3blob.Store
}

// Open loads the SDK configuration (AWS_ENDPOINT_URL and the per-service variables select
// LocalStack or the emulators) and builds the adapters for the named table and bucket.
func Open(ctx context.Context, tableName, bucket string) (Ports, error) {
	if strings.TrimSpace(tableName) == "" || strings.TrimSpace(bucket) == "" {
		return Ports{}, errors.New("the table and the bucket must be named (CRAWL_TABLE, CRAWL_BUCKET)")
	}
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return Ports{}, fmt.Errorf("aws configuration: %w", err)
	}
	// Every call is metered, so that a ledger (package ledger) can count each invocation's units.
	meter.New().Register(&cfg)
	c := awsconfig.NewClients(cfg)
	return Ports{Queue: sqsqueue.New(c.SQS), Table: dynamotable.New(c.DynamoDB, tableName), Blobs: s3blob.New(c.S3, bucket)}, nil
}

// NewHandlers builds the three handlers of a Lambda function from its environment: the crawl
// configuration (pipeline.FromEnv), CRAWL_TABLE and CRAWL_BUCKET. Any missing or malformed value
// is an error that names it, so the function fails at init rather than inside a handler.
func NewHandlers(ctx context.Context, getenv func(string) string, log *slog.Logger) (*pipeline.Handlers, error) {
	cfg, err := pipeline.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	p, err := Open(ctx, getenv("CRAWL_TABLE"), getenv("CRAWL_BUCKET"))
	if err != nil {
		return nil, err
	}
	return pipeline.New(cfg, pipeline.Ports{Queue: p.Queue, Table: p.Table, Blobs: p.Blobs}, log)
}
