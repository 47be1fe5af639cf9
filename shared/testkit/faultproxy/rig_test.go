package faultproxy_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

// rig is a proxy in front of the emulators, with SDK clients through it (the code under test's
// view) and straight to the emulators (the oracle's view).
type rig struct {
	p       *faultproxy.Proxy
	via     clients
	direct  clients
	timeout time.Duration // the proxied clients' HTTP timeout (0: none)
}

type clients struct {
	ddb *dynamodb.Client
	sqs *sqs.Client
	s3  *s3.Client
}

// newRig starts a proxy with schedule s in front of the emulators. maxAttempts bounds the proxied
// clients' attempts (0: the SDK's default), and timeout their HTTP requests (0: none).
func newRig(t *testing.T, s faultproxy.Schedule, maxAttempts int, timeout time.Duration) *rig {
	t.Helper()
	cfg := awstest.Config(t)
	for _, svc := range []string{"SQS", "DYNAMODB", "S3"} {
		awstest.RequireService(t, svc)
	}
	up, err := faultproxy.UpstreamsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(s, up)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		if t.Failed() {
			t.Logf("fault log:\n%s", p.Report())
		}
	})
	r := &rig{p: p, direct: clientsAt(cfg, up), timeout: timeout}
	via := cfg.Copy()
	if maxAttempts > 0 {
		via.RetryMaxAttempts = maxAttempts
	}
	if timeout > 0 {
		via.HTTPClient = awshttp.NewBuildableClient().WithTimeout(timeout)
	}
	r.via = clients{
		ddb: dynamodb.NewFromConfig(via, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.Endpoint(faultproxy.DynamoDB)) }),
		sqs: sqs.NewFromConfig(via, func(o *sqs.Options) { o.BaseEndpoint = aws.String(p.Endpoint(faultproxy.SQS)) }),
		s3: s3.NewFromConfig(via, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(p.Endpoint(faultproxy.S3))
			awsconfig.S3Options(o)
		}),
	}
	return r
}

// clientsAt returns clients of cfg that call the endpoints up. The SDK reads the
// AWS_ENDPOINT_URL_* variables when a request is made, not when the client is built, so a client
// that must not go through the proxy names its endpoint itself.
func clientsAt(cfg aws.Config, up faultproxy.Upstreams) clients {
	return clients{
		ddb: dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(up.DynamoDB) }),
		sqs: sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(up.SQS) }),
		s3: s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.BaseEndpoint = aws.String(up.S3)
			awsconfig.S3Options(o)
		}),
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// statusOf is the HTTP status of an SDK error (0 when it has none).
func statusOf(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// codeOf is the API error code of an SDK error ("" when it has none).
func codeOf(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// newQueue creates a queue straight on the emulator, deleted when the test ends.
func (r *rig) newQueue(t *testing.T) string {
	t.Helper()
	out, err := r.direct.sqs.CreateQueue(ctxT(t), &sqs.CreateQueueInput{QueueName: aws.String(awstest.UniqueName(t, "fp"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = r.direct.sqs.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
	})
	return *out.QueueUrl
}

// newBucket creates a bucket straight on the emulator.
func (r *rig) newBucket(t *testing.T) string {
	t.Helper()
	name := awstest.UniqueName(t, "fp")
	if _, err := r.direct.s3.CreateBucket(ctxT(t), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	return name
}
