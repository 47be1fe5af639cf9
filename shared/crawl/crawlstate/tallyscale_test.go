package crawlstate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// The tally at scale: a crawl's items as a real crawl writes them (crawlShape), loaded into
// DynamoDB at the configured endpoint with BatchWriteItem, then tallied (Drained) in a process of
// its own, this test binary run again, whose peak RSS and wall time are the tally's. The schedule
// function, which runs the drain checks, has 256 MB and 60 s (infra/crawlstack).
//
// CRAWL_TALLY_URLS sets the URL items (5,000 unless set: make test runs it under the race
// detector, whose memory and time are not asserted): `make tally-scale` runs a million.

// Env of the tally's child process: the table to tally, and the crawl.
const (
	envTallyURLs  = "CRAWL_TALLY_URLS"
	envTallyTable = "CRAWL_TALLY_CHILD_TABLE"
	envTallyCrawl = "CRAWL_TALLY_CHILD_CRAWL"
)

// The schedule function's memory and timeout.
const (
	scheduleMemory  = 256 << 20
	scheduleTimeout = 60 * time.Second
)

func init() {
	if name := os.Getenv(envTallyTable); name != "" {
		os.Exit(tallyChild(name, os.Getenv(envTallyCrawl)))
	}
}

// tallyResult is what the child prints, on a line of its own after tallyMark.
type tallyResult struct {
	Counters Counters
	Left     Left
	Seconds  float64
	// Queries are the seconds each query of a partition took, and the items it returned.
	Queries []queryTook
}

// timedQueries times the queries of the table it wraps, which run at once.
type timedQueries struct {
	table.Table
	mu   sync.Mutex
	took []queryTook
}

type queryTook struct {
	Part, Prefix string
	Items        int
	Seconds      float64
}

func (t *timedQueries) Query(ctx context.Context, part, prefix string, fn func(string, table.Item) error) error {
	start, n := time.Now(), 0
	err := t.Table.Query(ctx, part, prefix, func(sort string, it table.Item) error {
		n++
		return fn(sort, it)
	})
	t.mu.Lock()
	t.took = append(t.took, queryTook{part, prefix, n, time.Since(start).Seconds()})
	t.mu.Unlock()
	return err
}

const tallyMark = "tally-result: "

// tallyChild tallies crawl in the table name and prints the result; it returns the exit code.
func tallyChild(name, crawl string) int {
	ctx := context.Background()
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	start := time.Now()
	tb := &timedQueries{Table: dynamotable.New(dynamodb.NewFromConfig(cfg), name)}
	c, left, err := New(tb).Drained(ctx, crawl)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := json.Marshal(tallyResult{Counters: c, Left: left, Seconds: time.Since(start).Seconds(), Queries: tb.took})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(tallyMark + string(b))
	return 0
}

func TestIntegrationTallyAtScale(t *testing.T) {
	urls := 5_000
	if v := os.Getenv(envTallyURLs); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("%s=%q: want a number of URLs, 1000 or more", envTallyURLs, v)
		}
		urls = n
	}
	_, client, name := awstest.DynamoTable(t, "tally")
	shape := crawlShape{crawl: "scale", urls: urls}
	start := time.Now()
	items := loadShape(t, client, name, shape)
	load := time.Since(start)
	t.Logf("loaded %d items (%d URLs) in %v: %.0f items/s", items, urls, load.Round(time.Millisecond), float64(items)/load.Seconds())

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envTallyTable+"="+name, envTallyCrawl+"="+shape.crawl)
	cmd.Stderr = os.Stderr
	start = time.Now()
	out, err := cmd.Output()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("the tally's process: %v; output:\n%s", err, out)
	}
	var res tallyResult
	line := out[strings.Index(string(out), tallyMark)+len(tallyMark):]
	if err := json.Unmarshal(line, &res); err != nil {
		t.Fatalf("the tally's output %q: %v", out, err)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // kilobytes on Linux
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	var slowest queryTook
	read := 0
	for _, q := range res.Queries {
		read += q.Items
		if q.Seconds > slowest.Seconds {
			slowest = q
		}
	}
	t.Logf("tally of %d URLs: peak RSS %.1f MB, %.1f s in the process, %.1f s of CPU (%.1f s its tally, %d queries of %d items, the slowest %+v); left %+v",
		urls, float64(rss)/(1<<20), wall.Seconds(), cpu.Seconds(), res.Seconds, len(res.Queries), read, slowest, res.Left)

	c, left := res.Counters, res.Left
	fetched := int64(0)
	for i := range urls {
		if i%shapeGroup != 3 && i%shapeGroup != 7 {
			fetched++
		}
	}
	if c.Seen != int64(urls) || c.Fetched != fetched || c.Skipped+c.Failed+c.Fetched != int64(urls) || left.Queued != 0 ||
		left.Unparsed == 0 || left.Links != int64(shapeLinksPerURL*shapeGroup*shapeFileGroups) {
		t.Errorf("tally %+v, left %+v: want %d seen, %d fetched, none queued, the last file's pages unparsed, 28 links messages left",
			c, left, urls, fetched)
	}
	if raceEnabled {
		return // its memory and time are the race detector's
	}
	if rss > scheduleMemory {
		t.Errorf("the tally of %d URLs peaked at %.1f MB, over the schedule function's %d MB", urls, float64(rss)/(1<<20), scheduleMemory>>20)
	}
	if wall > scheduleTimeout {
		t.Errorf("the tally of %d URLs took %v, over the schedule function's %v", urls, wall, scheduleTimeout)
	}
}

// loadShape writes the shape's items into the table name with BatchWriteItem, 25 to a request and
// 16 requests at once, and returns how many it wrote.
func loadShape(t *testing.T, client *dynamodb.Client, name string, shape crawlShape) int {
	t.Helper()
	ctx := context.Background()
	batches := make(chan []types.WriteRequest)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if err := writeAll(ctx, client, name, b); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		}()
	}
	n := 0
	var batch []types.WriteRequest
	put := func(key table.Key, it table.Item) error {
		av, err := attributevalue.MarshalMap(map[string]any(it))
		if err != nil {
			return err
		}
		av[table.KeyAttr] = &types.AttributeValueMemberS{Value: key.Part}
		av[table.SortAttr] = &types.AttributeValueMemberS{Value: key.Sort}
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: av}})
		if n++; len(batch) == 25 {
			batches <- batch
			batch = nil
		}
		return nil
	}
	var err error
	for _, kind := range []string{parsedKind, groupKind, urlKind} {
		if err = shape.items(kind, put); err != nil {
			break
		}
	}
	if len(batch) > 0 {
		batches <- batch
	}
	close(batches)
	wg.Wait()
	if err != nil || firstErr != nil {
		t.Fatalf("load the shape: %v %v", err, firstErr)
	}
	return n
}

// writeAll writes the requests, again for those DynamoDB leaves unprocessed (the SDK's retryer
// backs off when DynamoDB throttles).
func writeAll(ctx context.Context, client *dynamodb.Client, name string, reqs []types.WriteRequest) error {
	for try := 0; len(reqs) > 0; try++ {
		if try == 100 {
			return fmt.Errorf("%d items left unprocessed after 100 tries", len(reqs))
		}
		out, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{name: reqs}})
		if err != nil {
			return err
		}
		reqs = out.UnprocessedItems[name]
	}
	return nil
}
