package faultproxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

// The chaos crawl: `crawl run --backend aws`, as a user types it, on the emulators through the
// fault proxy, with every fault kind at a few per cent, once for each of chaosSeeds. The sites
// count every request and the proxy sees every call the emulators applied, so each run is held
// to oracles of its own, not to what the crawler says of itself.

// chaosSeeds are the fault schedules' seeds, one run each. CRAWL_CHAOS_SEEDS ("7,8") runs others;
// seed 0 is the control, the same crawl through the proxy with no fault.
var chaosSeeds = []uint64{1, 2, 3, 4, 5}

// chaosRates are the faults' shares of the requests each kind can hit. Delay costs a worker the
// client's timeout each time, so it is rarer.
var chaosRates = map[faultproxy.Kind]float64{
	faultproxy.ApplyDrop: 0.02, faultproxy.Apply500: 0.02, faultproxy.Throttle: 0.03,
	faultproxy.Delay: 0.005, faultproxy.DupInReceive: 0.03, faultproxy.DupLater: 0.03,
}

// chaosSites are the pages of each loopback site of a run (each page links to 5 others): 400 a
// run, 2,000 over the 5 seeds.
var chaosSites = []int{160, 140, 100}

const (
	// chaosClientTimeout is the SDK clients' HTTP timeout (CRAWL_AWS_HTTP_TIMEOUT). A receive
	// long-polls 1 s, so it must be well above that.
	chaosClientTimeout = 2 * time.Second
	// chaosDelay is how long a Delay fault holds an answer: past the client's timeout.
	chaosDelay = 2500 * time.Millisecond
	// chaosRunTimeout bounds one run: a crawl that never ends fails on it, saying so.
	chaosRunTimeout = 90 * time.Second
)

// TestIntegrationChaosCrawl crawls several loopback sites with `crawl run --backend aws` through
// the fault proxy, once per seed, and holds each run to the guarantees: the crawl ends drained,
// every page is fetched (no URL lost) and fetched once, every fetched page has a record in the
// bucket, the counters equal the sites' exact tally, and one end event is written, after the last
// admission. A failure names the invariant, the URLs, and the faults that hit their items, and
// the run's whole fault log follows.
func TestIntegrationChaosCrawl(t *testing.T) {
	seeds := chaosSeeds
	if v := os.Getenv("CRAWL_CHAOS_SEEDS"); v != "" {
		seeds = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			if err != nil {
				t.Fatalf("CRAWL_CHAOS_SEEDS=%q: %v", v, err)
			}
			seeds = append(seeds, n)
		}
	}
	total := 0
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed_%d", seed), func(t *testing.T) {
			total += chaosRun(t, seed)
		})
	}
	t.Logf("%d pages in all over %d runs", total, len(seeds))
}

// chaosRun is one run with the schedule of seed; it returns the pages the sites hold.
func chaosRun(t *testing.T, seed uint64) int {
	cfg := awstest.Config(t)
	for _, svc := range []string{"SQS", "DYNAMODB", "S3"} {
		awstest.RequireService(t, svc)
	}
	up, err := faultproxy.UpstreamsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	var sites []*e2etest.Site
	pages := 0
	for _, n := range chaosSites {
		sites = append(sites, e2etest.NewSite(t, n, 5))
		pages += n
	}
	calls := &callLog{}
	rates := chaosRates
	if seed == 0 {
		rates = nil // the control: the same crawl through the proxy, with no fault
	}
	p, err := faultproxy.Start(faultproxy.Schedule{Seed: seed, Rates: rates, Delay: chaosDelay}, up, faultproxy.WithObserver(calls.add))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	name := awstest.UniqueName(t, "chaos")
	for k, v := range p.Env() {
		t.Setenv(k, v)
	}
	t.Setenv(awsconfig.EnvHTTPTimeout, chaosClientTimeout.String())
	t.Setenv("CRAWL_TABLE", name)
	t.Setenv("CRAWL_BUCKET", name)
	t.Setenv("CRAWL_QUEUE_PREFIX", name+"-")
	direct := clientsAt(cfg, up) // the oracle's view: straight to the emulators
	t.Cleanup(func() { deleteChaosResources(t, direct, name) })

	var seedsTxt strings.Builder
	for _, s := range sites {
		seedsTxt.WriteString(s.URL + "\n")
	}
	seedFile := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seedFile, []byte(seedsTxt.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sum, out := runChaosCrawl(t, seedFile)
	took := time.Since(start)
	st := crawlstate.New(dynamotable.New(direct.ddb, name))
	c := &chaosCheck{t: t, p: p, calls: calls, sites: sites, crawl: sum.Crawl, bucket: name, direct: direct, st: st}
	defer func() {
		t.Logf("seed %d: %d pages on %d sites in %v; %s", seed, pages, len(sites), took.Round(time.Millisecond), p.Summary())
		if t.Failed() {
			t.Logf("crawl output:\n%s", out)
			t.Logf("fault log of seed %d:\n%s", seed, p.Report())
		}
	}()
	if sum.Crawl == "" {
		t.Errorf("the crawl did not report (no JSON summary)")
		return pages
	}
	crawled := p.Requests()
	c.drained(sum)
	c.queuesEmpty(name)
	c.nothingLostOrTwice()
	c.records()
	c.counters(sum)
	c.oneEndAfterTheLastAdmission(sum)
	if n := p.Requests() - crawled; n != 0 {
		t.Errorf("the checks made %d requests through the proxy: an oracle must read the emulators directly", n)
	}
	return pages
}

// runChaosCrawl runs `crawl run --backend aws` on seedFile and returns its JSON summary (empty
// when it wrote none) and its whole output.
func runChaosCrawl(t *testing.T, seedFile string) (cli.Summary, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chaosRunTimeout)
	defer cancel()
	// Deliveries overlap by design (a 2 s visibility timeout under answers held 2.5 s). On a loaded
	// machine a batch that keeps outlasting it was received 5 times and went to the dead-letter
	// queue, its URLs done by the other deliveries (seen twice: seed 1 at a load of 10 to 13 on
	// 2 cores, seed 3 under -race): 10 receives keep the dead-letter queue for messages that fail.
	args := []string{"run", "--backend", "aws", "--json", "--quiet", "--allow-net", "127.0.0.0/8",
		"--host-rps", "0", "--host-concurrency", "0", "--visibility", "2s", "--max-receive", "10",
		"--concurrency", "16", seedFile}
	var stdout, stderr bytes.Buffer
	code := cli.Main(ctx, args, &stdout, &stderr)
	out := fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	if ctx.Err() != nil {
		t.Errorf("invariant 11 (the end comes): the crawl did not end within %v", chaosRunTimeout)
	} else if code != cli.ExitOK {
		t.Errorf("crawl %s: exit %d", strings.Join(args, " "), code)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var sum cli.Summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Errorf("the last line of stdout is not a JSON summary: %v", err)
	}
	return sum, out
}

// callLog keeps what the proxy saw the emulators apply: the SQS sends, the S3 PUTs and the
// DynamoDB PutItems (an admission puts its URL item).
type callLog struct {
	mu       sync.Mutex
	sends    []faultproxy.Call
	puts     []faultproxy.Call
	putItems []faultproxy.Call
}

func (l *callLog) add(c faultproxy.Call) {
	if c.Status/100 != 2 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case c.Service == faultproxy.SQS && (c.Op == "SendMessage" || c.Op == "SendMessageBatch"):
		l.sends = append(l.sends, c)
	case c.Service == faultproxy.S3 && c.Op == "PutObject":
		if !strings.HasSuffix(c.Target, "/finished.json") {
			c.Body = nil // only the end event's bodies are compared
		}
		l.puts = append(l.puts, c)
	case c.Service == faultproxy.DynamoDB && c.Op == "PutItem":
		c.Body = nil
		l.putItems = append(l.putItems, c)
	}
}

// deleteChaosResources deletes the run's queues, table and bucket, straight on the emulators.
func deleteChaosResources(t *testing.T, c clients, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, q := range []string{"schedule", "fetch", "parse", "schedule-dlq", "fetch-dlq", "parse-dlq"} {
		if u, err := c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name + "-" + q)}); err == nil {
			_, _ = c.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: u.QueueUrl})
		}
	}
	_, _ = c.ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	for {
		list, err := c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		if err != nil || len(list.Contents) == 0 {
			break
		}
		ids := make([]s3types.ObjectIdentifier, len(list.Contents))
		for i, o := range list.Contents {
			ids[i] = s3types.ObjectIdentifier{Key: o.Key}
		}
		if _, err := c.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(name), Delete: &s3types.Delete{Objects: ids}}); err != nil {
			t.Logf("empty bucket %s: %v", name, err)
			return
		}
	}
	if _, err := c.s3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Logf("delete bucket %s: %v", name, err)
	}
}
