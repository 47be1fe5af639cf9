// Package awsports builds the AWS adapters of the queue, table and blob ports from one SDK
// configuration: what the Lambda mains and `crawl run --backend aws` share. Clients are built once
// per process (per Lambda container), at init.
package awsports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/aws/callrecord"
	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/aws/eventbus"
	"github.com/crawlstack/crawlstack/shared/aws/s3blob"
	"github.com/crawlstack/crawlstack/shared/aws/sqsqueue"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/crawl/web/proxysecret"
	"github.com/crawlstack/crawlstack/shared/handler/renderer"
	"github.com/crawlstack/crawlstack/shared/observe/meter"
	"github.com/crawlstack/crawlstack/shared/observe/metrics"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// Ports are the AWS adapters.
type Ports struct {
	Queue *sqsqueue.Queue
	Table *dynamotable.Table
	Blobs *s3blob.Store
	// Events is the account's default event bus, where a crawl's end is announced.
	Events *eventbus.Bus
	// sdk is the configuration the clients were built with, for the proxies' read (ReadProxies).
	sdk aws.Config
}

// SecretReader reads the stack's secrets with clients built from the SDK configuration cfg: the
// proxies that ref names (CRAWL_PROXIES_SECRET) and the crawl specs' secret headers. The mains
// that run fetch pass awssecrets.Reader (package awssecrets links the SSM and Secrets Manager
// clients); the parse and schedule functions pass nil and do not link them.
type SecretReader interface {
	Proxies(ctx context.Context, cfg aws.Config, ref proxysecret.Ref) ([]string, error)
	Headers(cfg aws.Config) secretref.Resolver
}

// open loads the SDK configuration (AWS_ENDPOINT_URL and the per-service variables select
// LocalStack or the emulators) and builds the adapters for the named table and bucket, with the
// recorder rec (nil: none) on every client.
func open(ctx context.Context, tableName, bucket string, rec *callrecord.Recorder) (Ports, error) {
	if strings.TrimSpace(tableName) == "" || strings.TrimSpace(bucket) == "" {
		return Ports{}, errors.New("the table and the bucket must be named (CRAWL_TABLE, CRAWL_BUCKET)")
	}
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return Ports{}, fmt.Errorf("aws configuration: %w", err)
	}
	// Every call is metered, so that a ledger (package ledger) can count each invocation's units.
	meter.New().Register(&cfg)
	if rec != nil {
		rec.Register(&cfg)
	}
	if telemetry.Enabled() {
		otelaws.AppendMiddlewares(&cfg.APIOptions) // a client span per SDK call
	}
	c := awsconfig.NewClients(cfg)
	return Ports{Queue: sqsqueue.New(c.SQS), Table: dynamotable.New(c.DynamoDB, tableName), Blobs: s3blob.New(c.S3, bucket),
		Events: eventbus.New(eventbridge.NewFromConfig(cfg), eventbus.DefaultBus), sdk: cfg}, nil
}

// NewHandlers builds the three handlers of a Lambda function from its environment: the crawl
// configuration (pipeline.FromEnv), CRAWL_TABLE and CRAWL_BUCKET. Any missing or malformed value
// is an error that names it, so the function fails at init rather than inside a handler. read
// reads the proxies that CRAWL_PROXIES_SECRET names and the secret headers under the prefixes
// CRAWL_SECRET_HEADER_SSM_PREFIX and CRAWL_SECRET_HEADER_SECRETS_PREFIX name; with none of the
// three set, read may be nil.
func NewHandlers(ctx context.Context, getenv func(string) string, log *slog.Logger, read SecretReader) (*pipeline.Handlers, error) {
	return newHandlers(ctx, getenv, log, read, nil, pipeline.Schedule, pipeline.Fetch, pipeline.Parse)
}

// newHandlers is NewHandlers for the named handlers alone (pipeline.NewOnly).
func newHandlers(ctx context.Context, getenv func(string) string, log *slog.Logger, read SecretReader, browser renderer.Browser, names ...string) (*pipeline.Handlers, error) {
	cfg, err := pipeline.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if metrics.Enabled() { // set up before the handlers (newFunction): the budget counts the series
		cfg.MetricSeries = len(metrics.Steady)
	}
	rec, err := recorder(getenv)
	if err != nil {
		return nil, err
	}
	p, err := open(ctx, getenv("CRAWL_TABLE"), getenv("CRAWL_BUCKET"), rec)
	if err != nil {
		return nil, err
	}
	fetches := slices.Contains(names, pipeline.Fetch) || slices.Contains(names, pipeline.FetchSlow)
	if cfg.ProxiesSecret != "" && fetches {
		if read == nil {
			return nil, errors.New("CRAWL_PROXIES_SECRET is set, but this program reads no secrets: the fetch function's main passes awssecrets.Reader")
		}
		proxies := func(ctx context.Context, ref proxysecret.Ref) ([]string, error) { return read.Proxies(ctx, p.sdk, ref) }
		if cfg, err = SecretProxies(ctx, cfg, proxies); err != nil {
			return nil, err
		}
	}
	// The slow lane's function takes more of its queue's messages while its runs keep it alive
	// (fetcher.Deps.TopUp): the event source mapping's grant lets it receive and delete there.
	ports := pipeline.Ports{Queue: p.Queue, TopUp: p.Queue, Table: p.Table, Blobs: p.Blobs, Browser: browser}
	if fetches {
		if ports.Secrets, err = HeaderSecrets(cfg.SecretHeaders, read, p.sdk); err != nil {
			return nil, err
		}
	}
	if cfg.FinishEvery > 0 { // the stack sets it on schedule, which runs the drain checks
		// The same bus, which the stack lets schedule put on with finishEvent, hears the seed
		// files refused ("Seed File Refused").
		ports.Events, ports.Refusals = p.Events, p.Events
	}
	return pipeline.NewOnly(cfg, ports, log, names...)
}

// HeaderSecrets is how the fetch function reads crawl specs' secret headers: with read, only
// under the prefixes allowed names (the stack's grant), and, with none, not at all: a crawl whose
// spec names one fails its fetches with an error that names the stack's setting, rather than
// sending without it.
func HeaderSecrets(allowed secretref.Allowed, read SecretReader, sdk aws.Config) (secretref.Resolver, error) {
	if !allowed.Any() {
		return secretref.Held{Allowed: allowed, Resolver: secretref.None{}}, nil
	}
	if read == nil {
		return nil, errors.New("CRAWL_SECRET_HEADER_SSM_PREFIX or CRAWL_SECRET_HEADER_SECRETS_PREFIX is set, but this program reads no secrets: the fetch function's main passes awssecrets.Reader")
	}
	return secretref.Held{Allowed: allowed, Resolver: read.Headers(sdk)}, nil
}

// SecretProxies returns cfg with the proxies that cfg.ProxiesSecret names, as read reads them,
// added to its own. Its errors name the parameter or secret, never its value.
func SecretProxies(ctx context.Context, cfg pipeline.Config, read func(context.Context, proxysecret.Ref) ([]string, error)) (pipeline.Config, error) {
	ref, err := proxysecret.ParseRef(cfg.ProxiesSecret)
	if err != nil {
		return cfg, err
	}
	proxies, err := read(ctx, ref)
	if err != nil {
		return cfg, err
	}
	cfg.Proxies = append(slices.Clip(cfg.Proxies), proxies...)
	return cfg, cfg.Validate()
}

// recorder returns the call recorder that CRAWL_CALL_LOG asks for (package callrecord), or nil
// when it is unset, as it is in every deployment: the variable is for tests that hold a
// function's calls against its IAM policies. The file is opened for appending and stays open for
// the life of the process.
func recorder(getenv func(string) string) (*callrecord.Recorder, error) {
	path := getenv(callrecord.EnvLog)
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", callrecord.EnvLog, err)
	}
	return callrecord.New(f, getenv("AWS_LAMBDA_FUNCTION_NAME"), getenv(callrecord.EnvAccount)), nil
}
