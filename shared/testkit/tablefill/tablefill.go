// Package tablefill gives a state table a history: the items that earlier crawls leave behind,
// laid out as real crawls lay them out (the keys of shared/crawl/crawlstate), written fast with
// DynamoDB's BatchWriteItem. With it a test or `make cost` measures that a crawl costs the same on
// a table that other crawls have used as on an empty one (issue 42, docs/state.md).
//
// Each crawl of the history has, in its own partitions, a URL item for each of its pages (u#), a
// group item for every four (r#), a parse mark for every fifty (m#), a page budget for each of its
// hosts (b#) and its 128 counter shards (n#); and a crawl item among the crawls' partitions (k#).
// Items are 200 to 400 bytes, as the real ones are: a fetched URL with its stored page, a group
// with its outcomes. The history's crawls are named history-<n>-<run>, never a crawl the caller
// runs.
package tablefill

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// BatchWriter is the one DynamoDB call the filler makes.
type BatchWriter interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Options say how much history to write, and how.
type Options struct {
	// Items is how many items to write in all (at least 1).
	Items int
	// Pages is how many pages each crawl of the history had (4,000 when 0): about 5,200 items.
	Pages int
	// Workers is how many BatchWriteItem calls are in flight at once (8 when 0).
	Workers int
}

// Result is what Fill wrote.
type Result struct {
	Items, Crawls int
	// Bytes is the items' size as DynamoDB bills it (attribute names and values), roughly.
	Bytes   int64
	Elapsed time.Duration
}

// batchSize is BatchWriteItem's limit of items a call.
const batchSize = 25

// Fill writes o.Items items of other crawls into the table name with db. It stops at ctx's
// deadline, with an error.
func Fill(ctx context.Context, db BatchWriter, name string, o Options) (Result, error) {
	if o.Items < 1 {
		return Result{}, errors.New("tablefill: no items to write")
	}
	if o.Pages <= 0 {
		o.Pages = 4_000
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	run, err := runID()
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []map[string]types.AttributeValue)
	var bytes atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, o.Workers)
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if err := write(ctx, db, name, b); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	h := history{run: run, pages: o.Pages}
	crawls := 0
	var batch []map[string]types.AttributeValue
	send := func() bool {
		select {
		case batches <- batch:
			batch = nil
			return true
		case <-ctx.Done():
			return false
		}
	}
	for i := 0; i < o.Items; {
		crawls++
		if !h.crawl(crawls-1, o.Items-i, func(k table.Key, attrs map[string]types.AttributeValue) bool {
			attrs["pk"] = &types.AttributeValueMemberS{Value: k.Part}
			attrs["sk"] = &types.AttributeValueMemberS{Value: k.Sort}
			bytes.Add(size(attrs))
			batch = append(batch, attrs)
			i++
			return len(batch) < batchSize || send()
		}) {
			break
		}
	}
	if len(batch) > 0 {
		send()
	}
	close(batches)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("tablefill: %w", err)
	}
	return Result{Items: o.Items, Crawls: crawls, Bytes: bytes.Load(), Elapsed: time.Since(start)}, nil
}

// write puts the items with BatchWriteItem, and again those it returns unprocessed, until all
// are in or ctx ends.
func write(ctx context.Context, db BatchWriter, name string, items []map[string]types.AttributeValue) error {
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	for len(reqs) > 0 {
		out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{name: reqs}})
		if err != nil {
			return fmt.Errorf("tablefill: write %d items: %w", len(reqs), err)
		}
		reqs = out.UnprocessedItems[name]
	}
	return nil
}

// history makes the items of the history's crawls.
type history struct {
	run   string
	pages int
}

// crawl calls put with the items of crawl n, at most left of them, and stops when put returns
// false; it returns what the last put returned.
func (h history) crawl(n, left int, put func(table.Key, map[string]types.AttributeValue) bool) bool {
	id := "history-" + strconv.Itoa(n) + "-" + h.run
	host := func(i int) string { return "www.site-" + strconv.Itoa(n) + "-" + strconv.Itoa(i%7) + ".example" }
	now := time.Now()
	started := now.Add(-time.Duration(n+1) * 24 * time.Hour).UnixMilli()
	expires := now.Add(365 * 24 * time.Hour).Unix()
	emit := func(k table.Key, attrs map[string]types.AttributeValue) bool {
		if left == 0 {
			return false
		}
		left--
		return put(k, attrs)
	}
	if !emit(crawlstate.CrawlKey(id), crawlItem(id, started, expires)) {
		return false
	}
	for i := range crawlstate.CounterShards {
		if !emit(crawlstate.ShardKey(id, i), shardItem(i, expires)) {
			return false
		}
	}
	for i := range 7 {
		if !emit(crawlstate.BudgetKey(id, host(i)), map[string]types.AttributeValue{
			"pages": num(int64(h.pages / 7)), "updatedAt": num(started), table.TTLAttr: num(expires)}) {
			return false
		}
	}
	for i := range h.pages {
		u := "https://" + host(i) + "/section-" + strconv.Itoa(i%40) + "/article-" + strconv.Itoa(i) + ".html"
		sum := sha256.Sum256([]byte(u))
		key := hex.EncodeToString(sum[:])
		group := "g" + strconv.Itoa(i/4) + "-" + h.run
		if !emit(crawlstate.URLKey(id, key), urlItem(u, "https://"+host(i)+"/", group, i, started, expires)) {
			return false
		}
		if i%4 == 3 && !emit(crawlstate.GroupKey(id, group), groupItem(i, started, expires)) {
			return false
		}
		if i%50 == 49 && !emit(crawlstate.ParsedKey(id, warcName(i)), parsedItem(i, started, expires)) {
			return false
		}
	}
	return true
}

// warcName is the name of the WARC file of page i's fetch batch.
func warcName(i int) string {
	return "pages/history/" + strconv.Itoa(i/50) + "-20261201T000000Z.warc.gz"
}

func crawlItem(id string, started, expires int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"run": str("finished"), "runAt": num(started + 3_600_000), "startedAt": num(started),
		"budget": num(0), "end": str("announced"), "endBy": str("check-" + id), "endAt": num(started + 3_600_000),
		"endEvent":    str(`{"crawl":"` + id + `","state":"finished","seen":4000,"fetched":3890,"skipped":70,"failed":40}`),
		"announcedAt": num(started + 3_601_000), "checkSeq": num(41), table.TTLAttr: num(expires),
	}
}

func shardItem(i int, expires int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"seen": num(int64(31 + i%3)), "fetched": num(int64(30 + i%2)), "skipped": num(1), "failed": num(int64(i % 2)),
		"cost_ddbw": num(71_000), "cost_ddbr": num(5_000), "cost_sqs": num(16_000), "cost_s3a": num(480),
		"cost_s3b": num(600), "q" + strconv.Itoa(100_000+i): num(int64(12 + i%5)), table.TTLAttr: num(expires),
	}
}

func urlItem(u, root, group string, i int, started, expires int64) map[string]types.AttributeValue {
	at := started + int64(i)*250
	return map[string]types.AttributeValue{
		"state": str("fetched"), "url": str(u), "root": str(root), "depth": num(int64(1 + i%5)),
		"by": str("links-" + strconv.Itoa(i/90) + "-b7f3c1"), "g": str(group), "updatedAt": num(at),
		"page": str(`{"w":"` + strings.TrimPrefix(warcName(i), "pages/") + `","o":` + strconv.Itoa(i%50*20_480) +
			`,"n":6120,"s":200,"t":"text/html"}`),
		table.TTLAttr: num(expires),
	}
}

func groupItem(i int, started, expires int64) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{table.TTLAttr: num(expires)}
	for k := range 4 {
		short := fmt.Sprintf("%016x", uint64(i-k)*0x9e3779b97f4a7c15)
		it["o"+short] = str(`{"s":"f","c":200,"w":"` + strconv.Itoa((i-k)/50) + `-20261201","at":` + strconv.FormatInt(started, 10) + `}`)
	}
	return it
}

func parsedItem(i int, started, expires int64) map[string]types.AttributeValue {
	var links []string
	for k := range 6 {
		links = append(links, fmt.Sprintf("L%08x%08x", i, k))
	}
	return map[string]types.AttributeValue{
		"records": num(50), "links": str(strings.Join(links, ",")), "updatedAt": num(started + int64(i)*250),
		table.TTLAttr: num(expires),
	}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// size is the item's size roughly as DynamoDB bills it: names and values, numbers at their
// digits.
func size(it map[string]types.AttributeValue) int64 {
	var n int
	for k, v := range it {
		n += len(k)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += len(v.Value)/2 + 1
		}
	}
	return int64(n)
}

// runID names one Fill's crawls apart from another's in the same table.
func runID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("tablefill: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

var _ BatchWriter = (*dynamodb.Client)(nil)
