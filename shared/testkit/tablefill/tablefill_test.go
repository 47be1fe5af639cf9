package tablefill_test

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/tablefill"
)

// fakeDB keeps what BatchWriteItem is given, and returns the first item of every third call
// unprocessed, as DynamoDB may.
type fakeDB struct {
	mu    sync.Mutex
	calls int
	items map[table.Key]map[string]types.AttributeValue
}

func (f *fakeDB) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	out := &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{}}
	for name, reqs := range in.RequestItems {
		if len(reqs) > 25 {
			panic("more than 25 items in a batch")
		}
		for i, r := range reqs {
			if i == 0 && f.calls%3 == 0 {
				out.UnprocessedItems[name] = append(out.UnprocessedItems[name], r)
				continue
			}
			it := r.PutRequest.Item
			k := table.Key{Part: it["pk"].(*types.AttributeValueMemberS).Value, Sort: it["sk"].(*types.AttributeValueMemberS).Value}
			f.items[k] = it
		}
	}
	return out, nil
}

// The history is as many items as asked, each under a key of crawlstate's layout, of every kind a
// crawl leaves, of the crawls it names, and of realistic sizes.
func TestFillWritesCrawlsAsCrawlsLayThemOut(t *testing.T) {
	db := &fakeDB{items: map[table.Key]map[string]types.AttributeValue{}}
	const items = 12_345
	res, err := tablefill.Fill(context.Background(), db, "t", tablefill.Options{Items: items, Pages: 1_000, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != items || len(db.items) != items {
		t.Fatalf("wrote %d items (result %d), want %d", len(db.items), res.Items, items)
	}
	// A crawl of 1,000 pages: 1 + 128 + 7 + 1,000 + 250 + 20 items.
	if want := (items + 1405) / 1406; res.Crawls != want {
		t.Errorf("%d crawls, want %d", res.Crawls, want)
	}
	kinds := map[string]int{}
	crawls := map[string]bool{}
	for k, it := range db.items {
		kind := crawlstate.KindOf(k)
		if kind == "crawl" && strings.HasPrefix(k.Part, "k#") {
			kind = "crawl item"
			crawls[k.Sort] = true
			if k != crawlstate.CrawlKey(k.Sort) {
				t.Errorf("crawl item %s is not under its CrawlKey %s", k, crawlstate.CrawlKey(k.Sort))
			}
		}
		kinds[kind]++
		var size int
		for name, v := range it {
			size += len(name)
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				size += len(s.Value)
			} else {
				size += 4
			}
		}
		if kind != "host budget" && (size < 150 || size > 450) {
			t.Errorf("item %s of kind %s is %d bytes, want 150 to 450", k, kind, size)
		}
	}
	// Eight whole crawls, and 1,097 items of a ninth: its crawl item, shards and budgets (136), then
	// 757 pages' URLs with their 189 groups and 15 parse marks.
	if want := map[string]int{"crawl item": 9, "crawl": 9 * 128, "host budget": 9 * 7, "url": 8*1000 + 757,
		"groups": 8*250 + 189, "parsed": 8*20 + 15}; !maps.Equal(kinds, want) {
		t.Errorf("items by kind = %v, want %v", kinds, want)
	}
	for c := range crawls {
		if !strings.HasPrefix(c, "history-") {
			t.Errorf("crawl %q is not named history-…", c)
		}
	}
	if res.Bytes < int64(items)*150 {
		t.Errorf("%d bytes for %d items: smaller than real items", res.Bytes, items)
	}
}
