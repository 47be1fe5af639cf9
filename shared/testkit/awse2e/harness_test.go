package awse2e

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// crawlTimeout bounds one crawl: a hang fails the test instead of blocking the package.
const crawlTimeout = 60 * time.Second

// harness is a loopback demo site and an AWS backend (LocalStack or the emulators) whose queues,
// table and bucket belong to this test alone.
type harness struct {
	*e2etest.Harness
	cfg aws.Config
	// env is what the backend reads instead of the process environment: the test's own names.
	env map[string]string
	be  *cli.Backend
}

// newHarness serves a site of pages pages and opens (but does not set up) an AWS backend with
// fresh names. It skips the test when no AWS endpoint is set.
func newHarness(t *testing.T, pages, links int) *harness {
	t.Helper()
	h, _ := openHarness(t, "e2e")
	be := h.be
	// SQS's counts are approximate and lag on AWS: the dead-letter checks wait for them.
	h.Harness = &e2etest.Harness{T: t, Site: e2etest.NewSite(t, pages, links), Timeout: crawlTimeout,
		DLQSettle: 10 * time.Second, SeedsPrefix: be.SeedsPrefix,
		Backend: e2etest.NewBackend(be, be.Queue, be.Table, be.Blobs, cli.Resources{}, cli.StartCrawl, cli.NewRunner)}
	return h
}

// openHarness skips the test when no AWS endpoint is set, and otherwise opens (but does not set
// up) an AWS backend whose queues, table and bucket get fresh names starting with prefix, deleted
// when the test ends. It returns the name the table and the bucket share.
func openHarness(t *testing.T, prefix string) (*harness, string) {
	t.Helper()
	cfg := awstest.Config(t)
	for _, s := range []string{"SQS", "DYNAMODB", "S3"} {
		awstest.RequireService(t, s)
	}
	name := awstest.UniqueName(t, prefix)
	h := &harness{cfg: cfg, env: map[string]string{
		"CRAWL_TABLE": name, "CRAWL_BUCKET": name, "CRAWL_QUEUE_PREFIX": name + "-",
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	be, err := cli.OpenAWS(ctx, h.getenv)
	if err != nil {
		t.Fatalf("open the aws backend: %v", err)
	}
	h.be = be
	h.Harness = &e2etest.Harness{T: t}
	t.Cleanup(h.deleteResources)
	return h, name
}

// getenv is the environment the backend sees: only this test's names.
func (h *harness) getenv(name string) string { return h.env[name] }

// setup creates the queues, table and bucket, as `crawl run --backend aws` does.
func (h *harness) setup(qs cli.QueueSettings) {
	h.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.be.Setup(ctx, qs)
	if err != nil {
		h.T.Fatalf("set up the aws backend: %v", err)
	}
	h.Res = e2etest.Resources(res)
	h.settings(qs)
}

// settings makes the crawls use the queues' settings qs: the runner's visibility and the
// handlers' maxReceiveCount.
func (h *harness) settings(qs cli.QueueSettings) {
	h.Visibility, h.MaxReceive = qs.Visibility, qs.MaxReceiveCount
}

// attach finds the queues that someone else (`crawl run`) created under the test's prefix.
// CreateQueue of an existing name returns its address.
func (h *harness) attach() {
	h.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, dst := range map[string]*string{
		"schedule": &h.Res.Schedule, "schedule-dlq": &h.Res.ScheduleDLQ,
		"fetch": &h.Res.Fetch, "fetch-dlq": &h.Res.FetchDLQ,
		"parse": &h.Res.Parse, "parse-dlq": &h.Res.ParseDLQ,
	} {
		u, err := h.be.Queue.CreateQueue(ctx, h.be.QueuePrefix+name, queue.Config{})
		if err != nil {
			h.T.Fatalf("find queue %s: %v", name, err)
		}
		*dst = u
	}
}

// queueEnv sets the variables of a deployed stack's outputs (the queues' addresses), with which
// the crawl command uses the queues as they are and creates nothing.
func (h *harness) queueEnv() {
	for k, v := range map[string]string{
		"SCHEDULE_QUEUE_URL": h.Res.Schedule, "FETCH_QUEUE_URL": h.Res.Fetch, "PARSE_QUEUE_URL": h.Res.Parse,
		"SCHEDULE_DLQ_URL": h.Res.ScheduleDLQ, "FETCH_DLQ_URL": h.Res.FetchDLQ, "PARSE_DLQ_URL": h.Res.ParseDLQ,
	} {
		h.env[k] = v
	}
}

// setenv copies the harness's environment into the process's, for cli.Main.
func (h *harness) setenv() {
	for k, v := range h.env {
		h.T.Setenv(k, v)
	}
}

// deleteResources deletes the test's queues, table and bucket, so that a long-lived LocalStack
// does not fill up. Failures are logged: the names are unique, so leftovers harm no other test.
func (h *harness) deleteResources() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := awsconfig.NewClients(h.cfg)
	for _, q := range []string{h.Res.Schedule, h.Res.Fetch, h.Res.Parse, h.Res.ScheduleDLQ, h.Res.FetchDLQ, h.Res.ParseDLQ} {
		if q == "" {
			continue
		}
		if _, err := c.SQS.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q)}); err != nil {
			h.T.Logf("delete queue %s: %v", q, err)
		}
	}
	if h.Res.Schedule == "" {
		return // nothing was set up
	}
	if _, err := c.DynamoDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(h.be.TableName)}); err != nil {
		h.T.Logf("delete table %s: %v", h.be.TableName, err)
	}
	keys, err := h.be.Blobs.List(ctx, "")
	if err != nil {
		h.T.Logf("list bucket %s: %v", h.be.Bucket, err)
		return
	}
	for _, k := range keys {
		if _, err := c.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(h.be.Bucket), Key: aws.String(k)}); err != nil {
			h.T.Logf("delete s3://%s/%s: %v", h.be.Bucket, k, err)
			return
		}
	}
	if _, err := c.S3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(h.be.Bucket)}); err != nil {
		h.T.Logf("delete bucket %s: %v", h.be.Bucket, err)
	}
}
