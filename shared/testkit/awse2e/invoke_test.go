package awse2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	samples "github.com/crawlstack/crawlstack/events"
	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// invokeTimeout bounds one `crawl invoke` and each wait for its effects.
const invokeTimeout = 30 * time.Second

// sampleCrawl is the crawl of the message samples (sqs-links.json, sqs-fetch.json).
const sampleCrawl = "my-seeds-25f56f7b9ed9"

// The paths of the samples' URLs, once moved onto the test's site.
var (
	// admittedPaths are the URLs the links sample admits: its two seeds and the two in-scope links
	// of its second message (http://other.test/elsewhere is on another host, out of scope).
	admittedPaths = []string{"/", "/about", "/blog/", "/blog/first-post"}
	// fetchedPaths are the URLs of the fetch sample.
	fetchedPaths = []string{"/", "/about"}
)

// TestIntegrationInvokeBackendAWS runs `crawl invoke --backend aws` as a user types it after a
// deploy: the queues (with their DLQs), table and bucket exist, and the environment holds what a
// deployed function gets (CRAWL_TABLE, CRAWL_BUCKET, the queues' URLs, the crawl settings). The
// schedule and fetch samples, moved onto a loopback site, go through the real SQS, DynamoDB and S3
// APIs; the test reads their effects back through those APIs.
func TestIntegrationInvokeBackendAWS(t *testing.T) {
	h := newInvokeHarness(t)
	site := newSampleSite(t)
	c := awsconfig.NewClients(h.cfg)

	scheduled := t.Run("schedule", func(t *testing.T) {
		code, stdout, stderr := invokeAWS(t, "schedule", h.sample(t, samples.SQSLinks, site.URL))
		if code != cli.ExitOK {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		checkNoBatchFailures(t, stdout, stderr)
		msgs := receiveFetchURLs(t, c.SQS, h.Res.Fetch, len(admittedPaths))
		var got []string
		for _, m := range msgs {
			f, err := message.DecodeFetch(m)
			if err != nil {
				t.Errorf("fetch queue: %v\n%s", err, m)
				continue
			}
			if f.Crawl != sampleCrawl {
				t.Errorf("fetch message for %v is in crawl %q, want %q", f.URLList(), f.Crawl, sampleCrawl)
			}
			got = append(got, f.URLList()...)
		}
		if want := site.urls(admittedPaths...); !slices.Equal(sorted(got), want) {
			t.Errorf("fetch messages for %v, want one for each of %v", sorted(got), want)
		}
		if n := site.pageRequests(); n != 0 {
			t.Errorf("schedule requested %d pages from the site, want none: %v", n, site.hits())
		}
	})
	if !scheduled {
		t.Fatal("schedule failed: fetch has no admitted URLs to work on")
	}

	t.Run("fetch", func(t *testing.T) {
		code, stdout, stderr := invokeAWS(t, "fetch", h.sample(t, samples.SQSFetch, site.URL),
			"--allow-net", "127.0.0.0/8")
		if code != cli.ExitOK {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		checkNoBatchFailures(t, stdout, stderr)
		hits := site.hits()
		for _, p := range fetchedPaths {
			if hits[p] != 1 {
				t.Errorf("%s requested %d times, want once; requests: %v\nstderr:\n%s", p, hits[p], hits, stderr)
			}
		}
		if n := site.pageRequests(); n != len(fetchedPaths) {
			t.Errorf("%d page requests, want %d (the sample's pages, once each): %v", n, len(fetchedPaths), hits)
		}

		// One WARC file for the batch (one crawl), holding both pages, and its index.
		keys := listKeys(t, c.S3, h.be.Bucket, "pages/")
		if len(keys) != 2 || !strings.HasPrefix(keys[0], "pages/"+sampleCrawl+"/") || !strings.HasSuffix(keys[0], ".warc.gz") ||
			keys[1] != keys[0]+warcfile.IndexSuffix {
			t.Fatalf("objects under pages/: %v, want one pages/%s/....warc.gz and its index", keys, sampleCrawl)
		}
		checkArchive(t, c.S3, h.be.Bucket, keys[0], len(fetchedPaths))
		warc := readGzipObject(t, c.S3, h.be.Bucket, keys[0])
		for _, p := range fetchedPaths {
			if !strings.Contains(warc, site.body(p)) {
				t.Errorf("%s does not hold the page %s", keys[0], p)
			}
		}

		// One parse message for the batch, naming each page in that WARC file.
		var got []string
		for _, m := range receiveN(t, c.SQS, h.Res.Parse, 1) {
			p, err := message.DecodeParse(m)
			if err != nil {
				t.Errorf("parse queue: %v\n%s", err, m)
				continue
			}
			file, pages := p.PageList()
			if p.Crawl != sampleCrawl || file != keys[0] {
				t.Errorf("parse message %+v: want crawl %s and the pages of %s", p, sampleCrawl, keys[0])
			}
			for _, pg := range pages {
				if pg.Status != http.StatusOK || pg.Length <= 0 {
					t.Errorf("parse message page %+v: want status 200 and a record", pg)
				}
				got = append(got, pg.URL)
			}
		}
		if want := site.urls(fetchedPaths...); !slices.Equal(sorted(got), want) {
			t.Errorf("parse message pages %v, want one for each of %v", sorted(got), want)
		}
		// Nothing waited for its politeness slot in the queue or was sent back.
		expectEmpty(t, c.SQS, "fetch", h.Res.Fetch)
	})

	t.Run("bad event", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "links.json")
		if err := os.WriteFile(file, []byte("Records: not JSON\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		objects := listKeys(t, c.S3, h.be.Bucket, "")
		items := countItems(t, c.DynamoDB, h.be.TableName)
		requests := site.pageRequests()
		for _, fn := range []string{"schedule", "fetch", "parse"} {
			code, stdout, stderr := invokeAWS(t, fn, file, "--allow-net", "127.0.0.0/8")
			if code != cli.ExitUsage || !strings.Contains(stderr, file+" is not a JSON document") {
				t.Errorf("%s: exit %d, stderr %q; want exit %d saying %s is not a JSON document",
					fn, code, stderr, cli.ExitUsage, file)
			}
			if stdout != "" {
				t.Errorf("%s: stdout = %q, want nothing", fn, stdout)
			}
		}
		for name, q := range map[string]string{"schedule": h.Res.Schedule, "fetch": h.Res.Fetch, "parse": h.Res.Parse} {
			expectEmpty(t, c.SQS, name, q)
		}
		if after := listKeys(t, c.S3, h.be.Bucket, ""); !slices.Equal(after, objects) {
			t.Errorf("bucket holds %v after the bad events, want %v as before", after, objects)
		}
		if after := countItems(t, c.DynamoDB, h.be.TableName); after != items {
			t.Errorf("table holds %d items after the bad events, want %d as before", after, items)
		}
		if after := site.pageRequests(); after != requests {
			t.Errorf("%d page requests after the bad events, want %d as before", after, requests)
		}
	})
}

// newInvokeHarness creates this test's queues (with DLQs), table and bucket, as a deploy does, and
// sets the environment a deployed function gets. It skips the test when no AWS endpoint is set.
func newInvokeHarness(t *testing.T) *harness {
	t.Helper()
	h, name := openHarness(t, "inv")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.be.Setup(ctx, cli.QueueSettings{Visibility: 30 * time.Second, MaxReceiveCount: 5})
	if err != nil {
		t.Fatalf("set up the aws backend: %v", err)
	}
	h.Res = e2etest.Resources(res)
	// The variables of infra/crawlstack's functions, with the stack's defaults, except the host
	// rate: 100 (the most a deploy allows) so that the fetch sample's two pages on one host are
	// both fetched within the invocation instead of one waiting its turn in the queue.
	deployed := map[string]string{
		"CRAWL_TABLE": name, "CRAWL_BUCKET": name,
		"SCHEDULE_QUEUE_URL": h.Res.Schedule, "FETCH_QUEUE_URL": h.Res.Fetch, "PARSE_QUEUE_URL": h.Res.Parse,
		"CRAWL_SCOPE": "host", "CRAWL_MAX_DEPTH": "16", "CRAWL_MAX_PAGES": "0", "CRAWL_MAX_PAGES_PER_HOST": "100000",
		"CRAWL_INCLUDE": "", "CRAWL_EXCLUDE": "", "CRAWL_HOST_RPS": "100", "CRAWL_MAX_RECEIVE": "5",
		// Empty, as deployed by default: the loopback site is allowed by --allow-net alone.
		"CRAWL_ALLOW_NET": "", "CRAWL_ALLOW_PORTS": "", "CRAWL_RECRAWL_PREFIX": "seeds/",
		// Not a function's variable: `crawl invoke` must not need it.
		"CRAWL_QUEUE_PREFIX": "",
	}
	for k, v := range deployed {
		t.Setenv(k, v)
	}
	return h
}

// sample writes the named sample event, moved onto origin, to a file and returns its name.
func (h *harness) sample(t *testing.T, name, origin string) string {
	t.Helper()
	b, err := samples.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	moved := samples.Rewrite(b, origin)
	if bytes.Contains(moved, []byte(samples.SampleHost)) || !bytes.Contains(moved, []byte(origin)) {
		t.Fatalf("%s was not moved onto %s:\n%s", name, origin, moved)
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, moved, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// invokeAWS runs `crawl invoke --backend aws [extra...] FN FILE` with the process environment.
func invokeAWS(t *testing.T, fn, file string, extra ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
	defer cancel()
	args := append(append([]string{"invoke", "--backend", "aws"}, extra...), fn, file)
	var stdout, stderr bytes.Buffer
	code := cli.Main(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// checkNoBatchFailures checks that stdout is an SQS batch response with an empty failure list:
// {"batchItemFailures": []} and nothing else.
func checkNoBatchFailures(t *testing.T, stdout, stderr string) {
	t.Helper()
	var r map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	f, ok := r["batchItemFailures"]
	if len(r) != 1 || !ok || string(bytes.Join(bytes.Fields(f), nil)) != "[]" {
		t.Errorf("stdout = %s, want {\"batchItemFailures\": []}\nstderr:\n%s", stdout, stderr)
	}
}

// receiveN receives (and deletes) messages from the queue until it has n, or fails at the
// deadline; then it checks that no more are waiting. It returns their bodies.
func receiveN(t *testing.T, c *sqs.Client, queueURL string, n int) []string {
	t.Helper()
	return receiveCounted(t, c, queueURL, n, func(string) int { return 1 })
}

// receiveFetchURLs is receiveN for the URLs of fetch messages, which may carry several each.
func receiveFetchURLs(t *testing.T, c *sqs.Client, queueURL string, n int) []string {
	t.Helper()
	return receiveCounted(t, c, queueURL, n, func(body string) int {
		m, err := message.DecodeFetch(body)
		if err != nil {
			return 1 // the caller reports it
		}
		return len(m.URLList())
	})
}

// receiveCounted receives the queue's messages until they count n (count says what each counts
// for), and fails the test if they count more or more come.
func receiveCounted(t *testing.T, c *sqs.Client, queueURL string, n int, count func(string) int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
	defer cancel()
	var bodies []string
	got := 0
	for got < n {
		more, err := receive(ctx, c, queueURL)
		if err != nil {
			t.Fatalf("%d of %d from %s: %v", got, n, queueURL, err)
		}
		for _, b := range more {
			got += count(b)
		}
		bodies = append(bodies, more...)
	}
	if got > n {
		t.Errorf("%d on %s, want %d:\n%s", got, queueURL, n, strings.Join(bodies, "\n"))
	}
	if more, err := receive(ctx, c, queueURL); err != nil || len(more) != 0 {
		t.Errorf("%s after its %d: %v, %v; want nothing more", queueURL, n, more, err)
	}
	return bodies
}

// receive long-polls the queue once (1 s), deletes what it received and returns the bodies. The
// messages are invisible for a minute, so a failed delete cannot hand one back within the test.
func receive(ctx context.Context, c *sqs.Client, queueURL string) ([]string, error) {
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL),
		MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60})
	if err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL),
			ReceiptHandle: m.ReceiptHandle}); err != nil {
			return bodies, fmt.Errorf("delete message %s: %w", aws.ToString(m.MessageId), err)
		}
	}
	return bodies, nil
}

// expectEmpty fails the test if a long poll of the queue finds a message.
func expectEmpty(t *testing.T, c *sqs.Client, name, queueURL string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
	defer cancel()
	if got, err := receive(ctx, c, queueURL); err != nil || len(got) != 0 {
		t.Errorf("%s queue: %v, %v; want it empty", name, got, err)
	}
}

// listKeys lists the bucket's keys under prefix, sorted.
func listKeys(t *testing.T, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
	defer cancel()
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list s3://%s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	sort.Strings(keys)
	return keys
}

// readGzipObject returns the object's content, gunzipped (a WARC file is a series of gzip members).
func readGzipObject(t *testing.T, c *s3.Client, bucket, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
	defer cancel()
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	zr, err := gzip.NewReader(out.Body)
	if err != nil {
		t.Fatalf("s3://%s/%s is not gzip: %v", bucket, key, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("read s3://%s/%s: %v", bucket, key, err)
	}
	return string(b)
}

// countItems counts the table's items.
func countItems(t *testing.T, c *dynamodb.Client, table string) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
	defer cancel()
	var n int32
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), Select: dbtypes.SelectCount})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("count the items of %s: %v", table, err)
		}
		n += page.Count
	}
	return n
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// sampleSite serves the sample events' pages on a loopback address and counts the requests for
// each path. robots.txt is not found (everything allowed).
type sampleSite struct {
	URL string
	mu  sync.Mutex
	n   map[string]int
}

func newSampleSite(t *testing.T) *sampleSite {
	t.Helper()
	s := &sampleSite{n: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.n[r.URL.Path]++
		s.mu.Unlock()
		if !slices.Contains(admittedPaths, r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, s.body(r.URL.Path))
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil || !strings.HasPrefix(u.Hostname(), "127.") {
		t.Fatalf("the site is at %s (%v), want a 127.0.0.0/8 address", srv.URL, err)
	}
	s.URL = srv.URL
	return s
}

// body is the page served at path: it names the path, so a stored page shows where it came from.
func (s *sampleSite) body(path string) string {
	return "<html><head><title>sample page " + path + "</title></head><body>no links</body></html>"
}

// urls returns the site's URLs of paths, sorted.
func (s *sampleSite) urls(paths ...string) []string {
	var us []string
	for _, p := range paths {
		us = append(us, s.URL+p)
	}
	return sorted(us)
}

// hits returns the requests per path so far.
func (s *sampleSite) hits() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]int, len(s.n))
	for k, v := range s.n {
		m[k] = v
	}
	return m
}

// pageRequests counts the requests for anything but robots.txt.
func (s *sampleSite) pageRequests() int {
	n := 0
	for p, c := range s.hits() {
		if p != "/robots.txt" {
			n += c
		}
	}
	return n
}
