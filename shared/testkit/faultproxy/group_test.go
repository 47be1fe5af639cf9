package faultproxy_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

// TestIntegrationAReplayedGroupWriteRecordsOnce: the write of a fetch message's ten outcomes to
// their group's item (call 1 through the proxy: the outcomes, their WARC file named once in the
// item, the claims removed) is applied by DynamoDB and its answer lost, so the SDK replays it; the
// replay's condition fails on the write's own outcomes, and Record takes it for its success. Read
// directly, every page is as recorded and the crawl counts ten fetched pages, not twenty.
func TestIntegrationAReplayedGroupWriteRecordsOnce(t *testing.T) {
	for _, kind := range []faultproxy.Kind{faultproxy.Apply500, faultproxy.ApplyDrop} {
		t.Run(string(kind), func(t *testing.T) {
			r := newRig(t, faultproxy.Schedule{Seed: 1, Script: map[uint64]faultproxy.Kind{1: kind}}, 0, 0)
			_, _, name := awstest.DynamoTable(t, "fp")
			ctx := ctxT(t)
			via := crawlstate.New(dynamotable.New(r.via.ddb, name))
			direct := crawlstate.New(dynamotable.New(r.direct.ddb, name))
			const crawl, group, owner = "crawl-1", "G", "msg-1"
			file := "pages/" + crawl + "/2026/12/05/spdgnck6rj6fol6yjrt3jkiemm.warc.gz"
			at := time.Date(2026, 12, 5, 21, 14, 3, 0, time.UTC)
			var keys []string
			var outs []crawlstate.Outcome
			for i := range 10 {
				u := fmt.Sprintf("https://site-%d.example.com/articles/2026/12/05/story-%04d.html", i, i)
				k := urlnorm.Key(u)
				if res, _, err := direct.AdmitIn(ctx, crawl, group, k, u, u, 0, "L"); err != nil || res != crawlstate.Admitted {
					t.Fatalf("AdmitIn %s = %v, %v", u, res, err)
				}
				keys = append(keys, k)
				outs = append(outs, crawlstate.Outcome{Key: k, URL: u, State: crawlstate.Fetched, Prev: crawlstate.Queued, Owner: owner,
					Page: &crawlstate.Page{WARCKey: file, Offset: int64(383 + 31000*i), Length: 28000, FinalURL: u, Status: 200,
						ContentType: "text/html; charset=utf-8", FetchedAt: at.Add(time.Duration(i) * time.Second),
						Msg: message.PartName(file, 0), ETag: fmt.Sprintf(`"e%d"`, i), Digest: "sha256:" + strings.Repeat(fmt.Sprintf("%02x", i), 32)}})
			}
			if got, err := direct.ClaimGroup(ctx, crawl, group, owner, nil, time.Minute, keys); err != nil || len(got) != len(keys) {
				t.Fatalf("ClaimGroup = %v, %v", got, err)
			}
			if lost, err := via.Record(ctx, crawl, group, outs); err != nil || len(lost) != 0 {
				t.Fatalf("Record through the proxy = %v, %v; want its own replayed write taken for success", lost, err)
			}
			fs := r.p.Faults()
			if len(fs) != 1 || fs[0].Kind != kind || fs[0].Op != "UpdateItem" || !strings.Contains(fs[0].Target, "r#"+group) {
				t.Fatalf("fault log = %v, want one %s of the group's UpdateItem", fs, kind)
			}
			for _, o := range outs {
				u, err := direct.Get(ctx, crawl, o.Key)
				if err != nil || u.State != crawlstate.Fetched || u.Page == nil || !reflect.DeepEqual(*u.Page, *o.Page) {
					t.Errorf("%s reads %s %+v, %v; want fetched %+v", o.URL, u.State, u.Page, err, *o.Page)
				}
			}
			c, err := direct.Counters(ctx, crawl)
			if err != nil {
				t.Fatal(err)
			}
			if c.Fetched != int64(len(outs)) {
				t.Errorf("the crawl counts %d fetched pages, want %d: the replay counted once", c.Fetched, len(outs))
			}
		})
	}
}
