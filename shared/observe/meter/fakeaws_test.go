package meter_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/crawlstack/crawlstack/shared/observe/meter"
)

// answer is one canned HTTP answer.
type answer struct {
	status int
	body   string
	header map[string]string
}

// fakeAWS is an httptest server on 127.0.0.1 that answers each operation with canned answers in
// order (the last one repeats), and records the request bodies it got.
type fakeAWS struct {
	srv *httptest.Server

	mu       sync.Mutex
	answers  map[string][]answer
	requests map[string][]string
}

// newFakeAWS starts a fake AWS server with answers keyed by operation: the X-Amz-Target of a
// JSON protocol call (such as "DynamoDB_20120810.PutItem"), or "METHOD /path" for S3.
func newFakeAWS(t *testing.T, answers map[string][]answer) *fakeAWS {
	t.Helper()
	f := &fakeAWS{answers: answers, requests: map[string][]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAWS) serve(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("X-Amz-Target")
	if key == "" {
		key = r.Method + " " + r.URL.Path
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests[key] = append(f.requests[key], string(body))
	as := f.answers[key]
	var a answer
	switch len(as) {
	case 0:
		a = answer{status: http.StatusNotImplemented, body: `{"__type":"NotImplemented","message":"no canned answer for ` + key + `"}`}
	case 1:
		a = as[0]
	default:
		a, f.answers[key] = as[0], as[1:]
	}
	f.mu.Unlock()
	if r.Header.Get("X-Amz-Target") != "" {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// got returns the request bodies received for key.
func (f *fakeAWS) got(key string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests[key]...)
}

// config returns an SDK configuration that talks only to the fake server, retries at once, and
// carries a fresh meter.
func (f *fakeAWS) config() (aws.Config, *meter.Meter) {
	cfg := aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(f.srv.URL),
		HTTPClient:   f.srv.Client(),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		},
	}
	m := meter.New()
	m.Register(&cfg)
	return cfg, m
}

// testContext returns a context that ends with the test, or after a minute.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
