package awse2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/awstest"
	"github.com/crawlstack/crawlstack/shared/blob"
	"github.com/crawlstack/crawlstack/shared/cli"
	"github.com/crawlstack/crawlstack/shared/localrun"
	"github.com/crawlstack/crawlstack/shared/pipeline"
	"github.com/crawlstack/crawlstack/shared/queue"
	"github.com/crawlstack/crawlstack/shared/table"
)

// TestIntegrationCrawlFetchesEveryPageOnce crawls the site with the three handlers on the AWS
// adapters, driven by the local runner: every page fetched once, every URL terminal, every
// record stored, and a second run of the same seed file fetches nothing.
func TestIntegrationCrawlFetchesEveryPageOnce(t *testing.T) {
	h := newHarness(t, 40, 6)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	crawl, err := h.crawl(context.Background(), h.config(), h.ports(), h.be.Queue, 16)
	if err != nil {
		t.Fatal(err)
	}
	h.checkNothingLost(crawl)
	if r := h.site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
	before := h.site.Fetched()
	again, err := h.crawl(context.Background(), h.config(), h.ports(), h.be.Queue, 16)
	if err != nil {
		t.Fatal(err)
	}
	if again != crawl {
		t.Errorf("the same seed file started crawl %s, then %s", crawl, again)
	}
	if r := h.site.Repeats(); len(r) != 0 || h.site.Fetched() != before {
		t.Errorf("a second run of the same crawl fetched again: %v", r)
	}
}

// TestIntegrationCrawlRunBackendAWS runs `crawl run --backend aws` as a user types it, with the
// environment naming the endpoints and the test's own table, bucket and queue prefix: the command
// creates them, crawls, and its last line is a JSON summary that says everything was fetched.
func TestIntegrationCrawlRunBackendAWS(t *testing.T) {
	h := newHarness(t, 30, 5)
	h.setenv()
	seedFile := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seedFile, []byte(h.url+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--backend", "aws", "--json", "--quiet", "--allow-net", "127.0.0.0/8",
		"--host-rps", "0", "--host-concurrency", "0", "--visibility", "5s", "--max-receive", "5",
		"--concurrency", "8", seedFile}
	sum := runCrawl(t, args)
	if !sum.Finished || sum.Fetched != int64(h.site.Pages) || sum.Pending != 0 || sum.Failed != 0 ||
		len(sum.DeadLetters) != 0 || sum.ParseErrors != 0 {
		t.Errorf("summary = %+v: want finished, %d fetched, nothing pending, failed or dead", sum, h.site.Pages)
	}
	if want := "s3://" + h.be.Bucket + "/"; !strings.HasPrefix(sum.Pages, want) || !strings.HasPrefix(sum.Records, want) {
		t.Errorf("pages at %q and records at %q, want both under %s", sum.Pages, sum.Records, want)
	}
	h.attach()
	h.qs = cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5}
	h.checkNothingLost(sum.Crawl)
	if r := h.site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}

	// Run the same command again: it resumes the same crawl, which has nothing left to fetch.
	if awstest.Emulators() {
		// gofakes3 answers CreateBucket of an existing bucket with 409 BucketAlreadyExists (S3
		// answers the owner BucketAlreadyOwnedByYou), so the second set-up would fail there. Use the
		// queues as a deployed stack's outputs name them, which creates nothing.
		h.queueEnv()
		h.setenv()
	}
	before := h.site.Fetched()
	again := runCrawl(t, args)
	if again.Crawl != sum.Crawl || !again.Finished || again.Fetched != sum.Fetched || again.Pending != 0 {
		t.Errorf("second run: summary = %+v, want crawl %s finished with %d fetched", again, sum.Crawl, sum.Fetched)
	}
	if r := h.site.Repeats(); len(r) != 0 || h.site.Fetched() != before {
		t.Errorf("a second run of the same crawl fetched again: %v", r)
	}
}

// runCrawl runs the crawl command with args and returns the JSON summary of its last line.
func runCrawl(t *testing.T, args []string) cli.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crawlTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(ctx, args, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("crawl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, &stdout, &stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var sum cli.Summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("the last line of stdout is not a JSON summary: %v\n%s", err, &stdout)
	}
	if sum.Crawl == "" {
		t.Fatalf("the summary names no crawl:\n%s", &stdout)
	}
	return sum
}

// doubler delivers every message twice: SQS's at-least-once delivery, at its worst.
type doubler struct{ queue.Sender }

func (d doubler) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	twice := make([]queue.Entry, 0, 2*len(entries))
	for _, e := range entries {
		twice = append(twice, e, queue.Entry{ID: e.ID + "-dup", Body: e.Body, Delay: e.Delay})
	}
	return d.Sender.SendBatch(ctx, q, twice)
}

// TestIntegrationDuplicateDeliveriesFetchOnce sends every message of every handler twice through
// SQS: the claims in DynamoDB still let each page be fetched once.
func TestIntegrationDuplicateDeliveriesFetchOnce(t *testing.T) {
	h := newHarness(t, 40, 6)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	ports := h.ports()
	sent := &countingSender{Sender: h.be.Queue, fetchQueue: h.res.Fetch}
	ports.Queue = doubler{sent}
	crawl, err := h.crawl(context.Background(), h.config(), ports, h.be.Queue, 16)
	if err != nil {
		t.Fatal(err)
	}
	h.checkNothingLost(crawl)
	if r := h.site.Repeats(); len(r) != 0 {
		t.Errorf("duplicate deliveries fetched pages again: %v", r)
	}
	// The doubler really doubled the fetch messages: at least two per page went to SQS.
	if n := sent.fetch.Load(); n < 2*int64(h.site.Pages) {
		t.Errorf("%d fetch messages sent, want at least %d (two per page)", n, 2*h.site.Pages)
	}
}

// countingSender counts the messages sent to the fetch queue, and those sent with a delay.
type countingSender struct {
	queue.Sender
	fetchQueue     string
	fetch, delayed atomic.Int64
}

func (c *countingSender) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	if q == c.fetchQueue {
		for _, e := range entries {
			c.fetch.Add(1)
			if e.Delay > 0 {
				c.delayed.Add(1)
			}
		}
	}
	return c.Sender.SendBatch(ctx, q, entries)
}

var errCrashed = errors.New("crashed")

// crasher counts writes to every backend and, at the limit, "kills the process": every later
// write fails and the run's context is cancelled.
type crasher struct {
	limit  int64
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *crasher) step() error {
	if c.n.Add(1) > c.limit {
		c.cancel()
		return errCrashed
	}
	return nil
}

type crashQueue struct {
	c *crasher
	localrun.Queues
	queue.Sender
}

func (q crashQueue) SendBatch(ctx context.Context, name string, e []queue.Entry) error {
	if err := q.c.step(); err != nil {
		return err
	}
	return q.Sender.SendBatch(ctx, name, e)
}

func (q crashQueue) Delete(ctx context.Context, name, receipt string) error {
	if err := q.c.step(); err != nil {
		return err
	}
	return q.Queues.Delete(ctx, name, receipt)
}

type crashTable struct {
	c *crasher
	table.Table
}

func (t crashTable) Put(ctx context.Context, key string, it table.Item, cond table.Cond) error {
	if err := t.c.step(); err != nil {
		return err
	}
	return t.Table.Put(ctx, key, it, cond)
}

func (t crashTable) Update(ctx context.Context, key string, u table.Update, cond table.Cond) (table.Item, error) {
	if err := t.c.step(); err != nil {
		return nil, err
	}
	return t.Table.Update(ctx, key, u, cond)
}

type crashBlobs struct {
	c *crasher
	blob.Store
}

func (b crashBlobs) Put(ctx context.Context, key string, body []byte, ct string) error {
	if err := b.c.step(); err != nil {
		return err
	}
	return b.Store.Put(ctx, key, body, ct)
}

// TestIntegrationCrashMidBatchLosesNothing kills the handlers in the middle of their batches
// (every write after the limit fails and the run is cancelled, with messages in flight in SQS),
// then resumes with fresh handlers: nothing is lost, and only pages in flight at the crash may
// be fetched again.
func TestIntegrationCrashMidBatchLosesNothing(t *testing.T) {
	// Each limit kills the crawl at a different point: inside admission, in the middle of the
	// fetch batches, and while parse batches write records and send links.
	for _, limit := range []int64{12, 90, 220} {
		t.Run("after_"+strconv.FormatInt(limit, 10)+"_writes", func(t *testing.T) {
			const concurrency = 8
			h := newHarness(t, 30, 5)
			h.setup(cli.QueueSettings{Visibility: 2 * time.Second, MaxReceiveCount: 5})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := &crasher{limit: limit, cancel: cancel}
			cq := crashQueue{c: c, Queues: h.be.Queue, Sender: h.be.Queue}
			ports := pipeline.Ports{Queue: cq, Table: crashTable{c, h.be.Table}, Blobs: crashBlobs{c, h.be.Blobs}}
			if _, err := h.crawl(ctx, h.config(), ports, cq, concurrency); !errors.Is(err, context.Canceled) {
				t.Fatalf("the crashing run ended with %v, want a crash", err)
			}
			atCrash := h.site.Fetched()
			if atCrash == h.site.Pages {
				t.Fatalf("the crash at write %d came after the whole site was fetched: it tests nothing", limit)
			}
			// Resume: a new process (fresh handlers, a cold Bloom filter) on the same queues and table.
			crawl, err := h.crawl(context.Background(), h.config(), h.ports(), h.be.Queue, concurrency)
			if err != nil {
				t.Fatal(err)
			}
			h.checkInvariants(crawl, false)
			// Only a page whose GET was under way at the crash may be fetched twice.
			r := h.site.Repeats()
			t.Logf("crashed at write %d with %d of %d pages fetched; %d fetched again after the resume",
				limit, atCrash, h.site.Pages, len(r))
			if len(r) > concurrency {
				t.Errorf("%d pages fetched twice, more than the %d in flight at the crash: %v", len(r), concurrency, r)
			}
		})
	}
}
