package awse2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/crawlstack/crawlstack/functions/parse/parser"
	"github.com/crawlstack/crawlstack/shared/awsconfig"
	"github.com/crawlstack/crawlstack/shared/awstest"
	"github.com/crawlstack/crawlstack/shared/cli"
	"github.com/crawlstack/crawlstack/shared/crawlstate"
	"github.com/crawlstack/crawlstack/shared/demosite"
	"github.com/crawlstack/crawlstack/shared/localrun"
	"github.com/crawlstack/crawlstack/shared/pipeline"
	"github.com/crawlstack/crawlstack/shared/queue"
)

// crawlTimeout bounds one crawl: a hang fails the test instead of blocking the package.
const crawlTimeout = 60 * time.Second

// harness is a loopback demo site and an AWS backend (LocalStack or the emulators) whose queues,
// table and bucket belong to this test alone.
type harness struct {
	t   *testing.T
	cfg aws.Config
	// env is what the backend reads instead of the process environment: the test's own names.
	env  map[string]string
	be   *cli.Backend
	res  cli.Resources
	qs   cli.QueueSettings
	site *demosite.Site
	url  string
	// times records when each page request arrived, for the politeness test.
	mu    sync.Mutex
	times []time.Time
}

// newHarness serves a site of pages pages and opens (but does not set up) an AWS backend with
// fresh names. It skips the test when no AWS endpoint is set.
func newHarness(t *testing.T, pages, links int) *harness {
	t.Helper()
	cfg := awstest.Config(t)
	for _, s := range []string{"SQS", "DYNAMODB", "S3"} {
		awstest.RequireService(t, s)
	}
	name := awstest.UniqueName(t, "e2e")
	h := &harness{t: t, cfg: cfg, site: demosite.New(pages, links, 2000), env: map[string]string{
		"CRAWL_TABLE": name, "CRAWL_BUCKET": name, "CRAWL_QUEUE_PREFIX": name + "-",
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			h.mu.Lock()
			h.times = append(h.times, time.Now())
			h.mu.Unlock()
		}
		h.site.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	be, err := cli.OpenAWS(ctx, h.getenv)
	if err != nil {
		t.Fatalf("open the aws backend: %v", err)
	}
	h.be = be
	t.Cleanup(h.deleteResources)
	return h
}

// getenv is the environment the backend sees: only this test's names.
func (h *harness) getenv(name string) string { return h.env[name] }

// setup creates the queues, table and bucket, as `crawl run --backend aws` does.
func (h *harness) setup(qs cli.QueueSettings) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.be.Setup(ctx, qs)
	if err != nil {
		h.t.Fatalf("set up the aws backend: %v", err)
	}
	h.res, h.qs = res, qs
}

// attach finds the queues that someone else (`crawl run`) created under the test's prefix.
// CreateQueue of an existing name returns its address.
func (h *harness) attach() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, dst := range map[string]*string{
		"schedule": &h.res.Schedule, "schedule-dlq": &h.res.ScheduleDLQ,
		"fetch": &h.res.Fetch, "fetch-dlq": &h.res.FetchDLQ,
		"parse": &h.res.Parse, "parse-dlq": &h.res.ParseDLQ,
	} {
		u, err := h.be.Queue.CreateQueue(ctx, h.be.QueuePrefix+name, queue.Config{})
		if err != nil {
			h.t.Fatalf("find queue %s: %v", name, err)
		}
		*dst = u
	}
}

// queueEnv sets the variables of a deployed stack's outputs (the queues' addresses), with which
// the crawl command uses the queues as they are and creates nothing.
func (h *harness) queueEnv() {
	for k, v := range map[string]string{
		"SCHEDULE_QUEUE_URL": h.res.Schedule, "FETCH_QUEUE_URL": h.res.Fetch, "PARSE_QUEUE_URL": h.res.Parse,
		"SCHEDULE_DLQ_URL": h.res.ScheduleDLQ, "FETCH_DLQ_URL": h.res.FetchDLQ, "PARSE_DLQ_URL": h.res.ParseDLQ,
	} {
		h.env[k] = v
	}
}

// setenv copies the harness's environment into the process's, for cli.Main.
func (h *harness) setenv() {
	for k, v := range h.env {
		h.t.Setenv(k, v)
	}
}

// config is the pipeline configuration of the tests: the loopback site allowed, no rate limit.
func (h *harness) config() pipeline.Config {
	c := pipeline.DefaultConfig()
	c.ScheduleQueue, c.FetchQueue, c.ParseQueue = h.res.Schedule, h.res.Fetch, h.res.Parse
	c.AllowNets = []string{"127.0.0.0/8"}
	c.HostRPS, c.HostConcurrency = 0, 0
	if h.qs.MaxReceiveCount > 0 {
		c.MaxReceive = h.qs.MaxReceiveCount
	}
	return c
}

func (h *harness) ports() pipeline.Ports {
	return pipeline.Ports{Queue: h.be.Queue, Table: h.be.Table, Blobs: h.be.Blobs}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// crawl starts a crawl of seeds (the site alone when empty) with fresh handlers over ports
// (possibly wrapped) and runs the local runner on q until the pipeline is empty or ctx ends.
// It returns the crawl id and the runner's error.
func (h *harness) crawl(ctx context.Context, cfg pipeline.Config, ports pipeline.Ports, q localrun.Queues, concurrency int, seeds ...string) (string, error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, crawlTimeout)
	defer cancel()
	hs, err := pipeline.New(cfg, ports, quietLog())
	if err != nil {
		h.t.Fatal(err)
	}
	defer hs.Close()
	if len(seeds) == 0 {
		seeds = []string{h.url}
	}
	crawl, err := cli.StartCrawl(ctx, h.be, h.res, "seeds.txt", []byte(strings.Join(seeds, "\n")+"\n"))
	if err != nil {
		h.t.Fatal(err)
	}
	r := cli.NewRunner(q, h.res, hs, concurrency, h.qs.Visibility, quietLog())
	err = r.Run(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		h.t.Fatalf("the crawl did not finish within %v", crawlTimeout)
	}
	return crawl, err
}

// checkNothingLost proves invariant 1 on the site alone: every admitted URL is in exactly one
// terminal state, every page was fetched and has a record, and every dead-letter queue is empty.
func (h *harness) checkNothingLost(crawl string) {
	h.t.Helper()
	h.checkInvariants(crawl, true)
}

// checkInvariants is checkNothingLost; exactCounters also holds the live counters to the items
// (they may drift by one per crash, which is why summaries use Tally).
func (h *harness) checkInvariants(crawl string, exactCounters bool) {
	t := h.t
	t.Helper()
	ctx := context.Background()
	st := crawlstate.New(h.be.Table)
	c, err := st.Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pending() != 0 || c.Fetched != int64(h.site.Pages) || c.Failed != 0 {
		t.Errorf("counters = %+v: want %d fetched, none pending or failed", c, h.site.Pages)
	}
	states := map[crawlstate.State]int{}
	if err := st.ScanURLs(ctx, crawl, func(u crawlstate.URL) error {
		if !u.State.Terminal() {
			t.Errorf("url %s is still %s", u.URL, u.State)
		}
		states[u.State]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if states[crawlstate.Fetched] != h.site.Pages {
		t.Errorf("items by state = %v, want %d fetched", states, h.site.Pages)
	}
	if exactCounters {
		live, err := st.Counters(ctx, crawl)
		if err != nil {
			t.Fatal(err)
		}
		if live.Seen != c.Seen || live.Fetched != c.Fetched || live.Skipped != c.Skipped || live.Failed != c.Failed {
			t.Errorf("live counters %+v differ from the items %+v", live, c)
		}
	}
	h.checkSite()
	h.checkRecords(crawl)
	h.checkDLQs(map[string]int{})
}

// checkSite checks what the site saw: every page, and nothing robots.txt or nofollow forbids.
func (h *harness) checkSite() {
	h.t.Helper()
	if got := h.site.Fetched(); got != h.site.Pages {
		h.t.Errorf("the site served %d distinct pages, want %d", got, h.site.Pages)
	}
	if n := h.site.Hits("/private/secret") + h.site.Hits("/p/nofollow-never-fetched"); n != 0 {
		h.t.Errorf("fetched a robots-disallowed or nofollow page %d times", n)
	}
}

// checkRecords checks that every page of the site has a JSONL record in the bucket.
func (h *harness) checkRecords(crawl string) {
	h.t.Helper()
	recs := h.records(crawl)
	for i := 0; i < h.site.Pages; i++ {
		if !recs[strings.TrimSuffix(h.url, "/")+demosite.Path(i)] {
			h.t.Errorf("no record for page %d (%d records in all)", i, len(recs))
			return
		}
	}
}

// records returns the URLs that have a record in records/.
func (h *harness) records(crawl string) map[string]bool {
	h.t.Helper()
	ctx := context.Background()
	keys, err := h.be.Blobs.List(ctx, parser.RecordsPrefix+crawl+"/")
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, k := range keys {
		b, err := h.be.Blobs.Get(ctx, k)
		if err != nil {
			h.t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r parser.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				h.t.Fatalf("record in %s: %v", k, err)
			}
			out[r.URL] = true
		}
	}
	return out
}

// checkDLQs waits (with a deadline: SQS's counts are approximate and lag on AWS) until each
// dead-letter queue holds the number of messages want gives it (0 when absent).
func (h *harness) checkDLQs(want map[string]int) {
	h.t.Helper()
	got := h.dlqDepths()
	deadline := time.Now().Add(10 * time.Second)
	for !sameDepths(got, want) && time.Now().Before(deadline) {
		pollPause()
		got = h.dlqDepths()
	}
	if !sameDepths(got, want) {
		h.t.Errorf("dead-letter queues hold %v, want %v", got, want)
	}
}

func (h *harness) dlqDepths() map[string]int {
	h.t.Helper()
	out := map[string]int{}
	for name, q := range map[string]string{"schedule": h.res.ScheduleDLQ, "fetch": h.res.FetchDLQ, "parse": h.res.ParseDLQ} {
		v, nv, err := h.be.Queue.Depth(context.Background(), q)
		if err != nil {
			h.t.Fatalf("depth of the %s dead-letter queue: %v", name, err)
		}
		if v+nv > 0 {
			out[name] = v + nv
		}
	}
	return out
}

func sameDepths(got, want map[string]int) bool {
	for _, n := range []string{"schedule", "fetch", "parse"} {
		if got[n] != want[n] {
			return false
		}
	}
	return true
}

// pollPause is the pause between two looks at a condition that a deadline bounds.
func pollPause() {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	<-t.C
}

// deleteResources deletes the test's queues, table and bucket, so that a long-lived LocalStack
// does not fill up. Failures are logged: the names are unique, so leftovers harm no other test.
func (h *harness) deleteResources() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := awsconfig.NewClients(h.cfg)
	for _, q := range []string{h.res.Schedule, h.res.Fetch, h.res.Parse, h.res.ScheduleDLQ, h.res.FetchDLQ, h.res.ParseDLQ} {
		if q == "" {
			continue
		}
		if _, err := c.SQS.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q)}); err != nil {
			h.t.Logf("delete queue %s: %v", q, err)
		}
	}
	if h.res.Schedule == "" {
		return // nothing was set up
	}
	if _, err := c.DynamoDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(h.be.TableName)}); err != nil {
		h.t.Logf("delete table %s: %v", h.be.TableName, err)
	}
	keys, err := h.be.Blobs.List(ctx, "")
	if err != nil {
		h.t.Logf("list bucket %s: %v", h.be.Bucket, err)
		return
	}
	for _, k := range keys {
		if _, err := c.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(h.be.Bucket), Key: aws.String(k)}); err != nil {
			h.t.Logf("delete s3://%s/%s: %v", h.be.Bucket, k, err)
			return
		}
	}
	if _, err := c.S3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(h.be.Bucket)}); err != nil {
		h.t.Logf("delete bucket %s: %v", h.be.Bucket, err)
	}
}
