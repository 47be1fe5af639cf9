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

	"github.com/crawlstack/crawlstack/shared/app/memlimit"
	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

// The tally at scale: a crawl's items as a real crawl writes them (crawlShape), loaded into
// DynamoDB at the configured endpoint with BatchWriteItem, then tallied as the drain checks tally
// it: in steps (DrainedStep), each in a process of its own, this test binary run again with the
// schedule function's memory limit (GOMEMLIMIT, as package memlimit sets it from its 256 MB),
// each step going on from the state the one before saved. Each process's peak RSS and wall time
// are its step's, and must fit the schedule function's 256 MB and 60 s.
//
// CRAWL_TALLY_URLS sets the URL items (5,000 unless set: make test runs it under the race
// detector, whose memory and time are not asserted): `make tally-scale` runs a million.
// CRAWL_TALLY_BUDGET sets a step's budget: the checks' (finish.DefaultTallyBudget, 20 s) with
// CRAWL_TALLY_URLS set, 2 s unless (so that a small crawl takes a few steps too).

// Env of the tally's child process: the table to tally, the crawl, a step's budget.
const (
	envTallyURLs   = "CRAWL_TALLY_URLS"
	envTallyBudget = "CRAWL_TALLY_BUDGET"
	envTallyTable  = "CRAWL_TALLY_CHILD_TABLE"
	envTallyCrawl  = "CRAWL_TALLY_CHILD_CRAWL"
	envTallyStep   = "CRAWL_TALLY_CHILD_BUDGET"
)

// The schedule function's memory and timeout, and the budget of a check's step of the tally
// (finish.DefaultTallyBudget).
const (
	scheduleMemoryMB   = 256
	scheduleMemory     = scheduleMemoryMB << 20
	scheduleTimeout    = 60 * time.Second
	checkTallyBudget   = 20 * time.Second
	tallyScaleMaxSteps = 200
)

func init() {
	if name := os.Getenv(envTallyTable); name != "" {
		os.Exit(tallyChild(name, os.Getenv(envTallyCrawl), os.Getenv(envTallyStep)))
	}
}

// tallyResult is what the child prints, on a line of its own after tallyMark.
type tallyResult struct {
	Step TallyStep
	// Seconds is the step's time in the process.
	Seconds float64
}

const tallyMark = "tally-result: "

// tallyBasis is the basis the bench's steps give: the crawl's counters do not move.
const tallyBasis = 1

// tallyChild takes a step of the tally of crawl in the table name, within budget, and prints the
// result; it returns the exit code.
func tallyChild(name, crawl, budget string) int {
	ctx := context.Background()
	d, err := time.ParseDuration(budget)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	start := time.Now()
	st, err := New(dynamotable.New(dynamodb.NewFromConfig(cfg), name)).DrainedStep(ctx, crawl, tallyBasis, d)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := json.Marshal(tallyResult{Step: st, Seconds: time.Since(start).Seconds()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println(tallyMark + string(b))
	return 0
}

// stepRun is one step's process as the parent saw it.
type stepRun struct {
	res  tallyResult
	wall time.Duration
	rss  int64
}

// runStep runs a step of the tally in a child process with the schedule function's memory limit.
func runStep(t *testing.T, name, crawl string, budget time.Duration) stepRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envTallyTable+"="+name, envTallyCrawl+"="+crawl, envTallyStep+"="+budget.String(),
		"GOMEMLIMIT="+strconv.FormatInt(memlimit.For(scheduleMemoryMB), 10))
	cmd.Stderr = os.Stderr
	start := time.Now()
	out, err := cmd.Output()
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("the tally's process: %v; output:\n%s", err, out)
	}
	var res tallyResult
	i := strings.Index(string(out), tallyMark)
	if i < 0 {
		t.Fatalf("the tally's output %q has no result", out)
	}
	if err := json.Unmarshal(out[i+len(tallyMark):], &res); err != nil {
		t.Fatalf("the tally's output %q: %v", out, err)
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // kilobytes on Linux
	return stepRun{res: res, wall: wall, rss: rss}
}

func TestIntegrationTallyAtScale(t *testing.T) {
	urls, budget := 5_000, 2*time.Second
	if v := os.Getenv(envTallyURLs); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("%s=%q: want a number of URLs, 1000 or more", envTallyURLs, v)
		}
		urls, budget = n, checkTallyBudget
	}
	if v := os.Getenv(envTallyBudget); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a duration", envTallyBudget, v)
		}
		budget = d
	}
	_, client, name := awstest.DynamoTable(t, "tally")
	shape := crawlShape{crawl: "scale", urls: urls}
	start := time.Now()
	items := loadShape(t, client, name, shape)
	load := time.Since(start)
	t.Logf("loaded %d items (%d URLs) in %v: %.0f items/s", items, urls, load.Round(time.Millisecond), float64(items)/load.Seconds())
	if _, err := New(dynamotable.New(client, name)).Runs.t.Update(context.Background(), CrawlKey(shape.crawl),
		table.Update{Set: map[string]any{attrStarted: time.Now().UnixMilli()}}, table.Cond{}); err != nil {
		t.Fatal(err) // the crawl item, which holds a saved tally's head
	}

	var steps []stepRun
	var total time.Duration
	var read int64
	for len(steps) < tallyScaleMaxSteps {
		s := runStep(t, name, shape.crawl, budget)
		steps = append(steps, s)
		total += s.wall
		read += s.res.Step.Read
		t.Logf("step %d: %.1f s (%.1f s in the step), peak RSS %.1f MB, %d items read, %d bytes saved",
			len(steps), s.wall.Seconds(), s.res.Seconds, float64(s.rss)/(1<<20), s.res.Step.Read, s.res.Step.Saved)
		if s.res.Step.Dropped != "" {
			t.Errorf("step %d dropped the saved tally: %s", len(steps), s.res.Step.Dropped)
		}
		if s.res.Step.Steps != len(steps) {
			t.Errorf("step %d says it is step %d of its tally", len(steps), s.res.Step.Steps)
		}
		if s.res.Step.Done {
			break
		}
	}
	last := steps[len(steps)-1].res.Step
	if !last.Done {
		t.Fatalf("the tally did not complete in %d steps of %v", len(steps), budget)
	}
	slowest, peak := steps[0], steps[0]
	for _, s := range steps {
		if s.wall > slowest.wall {
			slowest = s
		}
		if s.rss > peak.rss {
			peak = s
		}
	}
	t.Logf("tally of %d URLs in %d steps of %v: %.1f s in all, the slowest step %.1f s, the highest peak RSS %.1f MB; %d items read; left %+v",
		urls, len(steps), budget, total.Seconds(), slowest.wall.Seconds(), float64(peak.rss)/(1<<20), read, last.Left)

	c, left := last.Counters, last.Left
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
	if read != int64(items) {
		t.Errorf("the steps read %d items, want the %d loaded, each once", read, items)
	}
	if it, err := New(dynamotable.New(client, name)).Runs.t.Get(context.Background(), CrawlKey(shape.crawl)); err != nil || it.Has(attrTallyGen) {
		t.Errorf("the crawl item after the tally: %v, %v; want no saved tally named", it, err)
	}
	if raceEnabled {
		return // its memory and time are the race detector's
	}
	for i, s := range steps {
		if s.rss > scheduleMemory {
			t.Errorf("step %d of the tally of %d URLs peaked at %.1f MB, over the schedule function's %d MB", i+1, urls, float64(s.rss)/(1<<20), scheduleMemoryMB)
		}
		if s.wall > scheduleTimeout-checkTallyBudget {
			t.Errorf("step %d of the tally of %d URLs took %v: with a renewal's %v, over the schedule function's %v", i+1, urls, s.wall,
				checkTallyBudget, scheduleTimeout)
		}
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
