package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/aws/awssecrets"
	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/aws/s3blob"
	"github.com/crawlstack/crawlstack/shared/aws/sqsqueue"
	"github.com/crawlstack/crawlstack/shared/aws/stackoutputs"
	"github.com/crawlstack/crawlstack/shared/observe/meter"
)

// openBackend opens the backend the flags chose.
func openBackend(ctx context.Context, o RunOptions) (*Backend, error) {
	if o.Backend == "embedded" {
		return OpenEmbedded(o.State)
	}
	getenv := environ
	if o.Stack != "" {
		vars, err := stackVars(ctx, o.Stack)
		if err != nil {
			return nil, err
		}
		getenv = func(k string) string {
			if v, ok := vars[k]; ok {
				return v
			}
			return environ(k)
		}
	}
	return OpenAWS(ctx, getenv)
}

// stackVars are the variables the outputs of the deployed stack name set (stackoutputs.Vars):
// its table, bucket and queues, which win over the environment's.
func stackVars(ctx context.Context, stack string) (map[string]string, error) {
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	return stackoutputs.Read(ctx, cloudformation.NewFromConfig(cfg), stack)
}

// openExisting opens the backend for a command about crawls that are there already (status,
// failures, pause, redrive): on the embedded backend, a state directory that crawl run has not made
// is an error, not a new empty one.
func openExisting(ctx context.Context, o RunOptions) (*Backend, error) {
	if o.Backend == "embedded" {
		if _, err := os.Stat(filepath.Join(o.State, stateFile)); err != nil {
			return nil, fmt.Errorf("no crawl state in %s: crawl run makes one there; --state (or CRAWL_STATE) names another", o.State)
		}
	}
	return openBackend(ctx, o)
}

// OpenAWS opens the AWS backend: real AWS, LocalStack or the emulators, as AWS_ENDPOINT_URL and
// the per-service variables say. When SCHEDULE_QUEUE_URL, FETCH_QUEUE_URL and PARSE_QUEUE_URL are
// set (a deployed stack's outputs), those queues are used and none are created; otherwise queues
// named crawlstack-* are created. CRAWL_TABLE and CRAWL_BUCKET name the table and bucket
// (default crawlstack-crawl and crawlstack-crawl-local).
func OpenAWS(ctx context.Context, getenv func(string) string) (*Backend, error) {
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws configuration: %w", err)
	}
	// Every call is metered, so that the run's ledger (bookCosts) can count its units.
	meter.New().Register(&cfg)
	be := OpenAWSWith(cfg, getenv)
	be.Metered = true
	return be, nil
}

// OpenAWSWith is OpenAWS with an SDK configuration of the caller's (one that meters its calls,
// for example).
func OpenAWSWith(cfg aws.Config, getenv func(string) string) *Backend {
	c := awsconfig.NewClients(cfg)
	tableName := envOr(getenv, "CRAWL_TABLE", "crawlstack-crawl")
	bucket := envOr(getenv, "CRAWL_BUCKET", "crawlstack-crawl-local")
	q := sqsqueue.New(c.SQS)
	be := &Backend{
		Name: "aws", Queue: q, Find: q.QueueURL, Table: dynamotable.New(c.DynamoDB, tableName),
		Blobs: s3blob.New(c.S3, bucket), TableName: tableName, Bucket: bucket,
		QueuePrefix: envOr(getenv, "CRAWL_QUEUE_PREFIX", "crawlstack-"),
		// Not seeds/: on a deployed stack a file there starts a crawl by itself (the S3
		// notification), and `crawl run` starts its own: the pages would be crawled twice.
		SeedsPrefix: "runs/seeds/",
		Where:       func(prefix string) string { return "s3://" + bucket + "/" + prefix },
		Close:       func() error { return nil },
		// crawl run reads specs' ssm: and secretsmanager: headers with the caller's credentials.
		Secrets: awssecrets.Reader{}.Headers(cfg),
	}
	s, f, p := getenv("SCHEDULE_QUEUE_URL"), getenv("FETCH_QUEUE_URL"), getenv("PARSE_QUEUE_URL")
	if s != "" && f != "" && p != "" {
		be.Existing = &Resources{Schedule: s, Fetch: f, Parse: p, ScheduleDLQ: getenv("SCHEDULE_DLQ_URL"),
			FetchDLQ: getenv("FETCH_DLQ_URL"), ParseDLQ: getenv("PARSE_DLQ_URL"),
			Render: getenv("RENDER_QUEUE_URL"), RenderDLQ: getenv("RENDER_DLQ_URL"), FetchSlow: getenv("FETCHSLOW_QUEUE_URL")}
	}
	return be
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
