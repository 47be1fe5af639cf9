package crawlstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// maxGroupOfTen is the most bytes, by DynamoDB's rule, that the item of a group of ten fetched
// pages may take (testAGroupOfTenIsSmall): 1,235 measured for a crawl id of 13 characters (2,971
// in the JSON form of before, three write units a write where this takes two).
const maxGroupOfTen = 1250

// itemBytes is the size of the item at key by DynamoDB's rule ("DynamoDB item sizes and formats"
// in its developer guide): each attribute's name and value in bytes, a number 1 byte for two
// significant digits and 1 more, a boolean 1; the key's attributes are "pk" and "sk".
func itemBytes(key table.Key, it table.Item) int {
	n := len("pk") + len(key.Part) + len("sk") + len(key.Sort)
	for name, v := range it {
		n += len(name)
		switch v := v.(type) {
		case string:
			n += len(v)
		case bool:
			n++
		default:
			digits := strings.Trim(strconv.FormatInt(it.Int(name), 10), "-0")
			n += (len(digits)+1)/2 + 1
		}
	}
	return n
}

// tenPages are the outcomes of ten fetched pages of a fetch message, as a real crawl records them:
// URLs of 100 characters, one WARC file, an ETag, a Last-Modified and a payload digest each.
func tenPages(crawl string, owner string) ([]string, []Outcome) {
	file := "pages/" + crawl + "/2026/12/05/" + "spdgnck6rj6fol6yjrt3jkiemm.warc.gz"
	at := time.Date(2026, 12, 5, 21, 14, 3, 0, time.UTC)
	var urls []string
	var outs []Outcome
	for i := range 10 {
		u := fmt.Sprintf("https://www.news-site-%d.example.com/articles/2026/12/05/a-long-slug-for-a-story-number-%04d.html", i, i)
		u += strings.Repeat("x", 100-len(u))
		var sum [32]byte
		_, _ = rand.Read(sum[:])
		p := &Page{WARCKey: file, Offset: int64(383 + 31000*i), Length: int64(28000 + 331*i), FinalURL: u, Status: 200,
			ContentType: "text/html; charset=utf-8", FetchedAt: at.Add(time.Duration(i)*217*time.Millisecond + 123456789),
			Msg: message.PartName(file, i/4), ETag: fmt.Sprintf(`"65f1c2a%d-7b3%d"`, i, i),
			LastModified: at.Add(-time.Duration(i) * 24 * time.Hour).Format(http1123), Digest: "sha256:" + hex.EncodeToString(sum[:])}
		urls = append(urls, u)
		outs = append(outs, Outcome{Key: urlnorm.Key(u), URL: u, State: Fetched, Prev: Queued, Page: p, Owner: owner})
	}
	return urls, outs
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"

// testAGroupOfTenIsSmall: the item of a group whose ten URLs were fetched, with their validators
// and digests, takes at most maxGroupOfTen bytes by DynamoDB's rule, and every page reads back as
// recorded.
func testAGroupOfTenIsSmall(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s := New(tb)
	crawl := crawlName(t)
	urls, outs := tenPages(crawl, "M")
	keys := recordTogether(t, s, crawl, "G", urls, outs)
	key := groupKey(crawl, "G")
	it, err := tb.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if n := itemBytes(key, it); n > maxGroupOfTen {
		t.Errorf("a group of 10 fetched pages takes %d bytes (crawl id of %d), want at most %d", n, len(crawl), maxGroupOfTen)
	} else {
		t.Logf("a group of 10 fetched pages takes %d bytes (crawl id of %d)", n, len(crawl))
	}
	got := getEach(t, s, crawl, keys)
	for _, o := range outs {
		if u := got[o.Key]; u.State != Fetched || u.Page == nil || !reflect.DeepEqual(*u.Page, *o.Page) {
			t.Errorf("%s reads back %s %+v, want fetched %+v", o.URL, u.State, u.Page, *o.Page)
		}
	}
}

// recordTogether admits urls in group, claims them for outs' owner and records outs, and returns
// their keys.
func recordTogether(t *testing.T, s *Store, crawl, group string, urls []string, outs []Outcome) []string {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, len(urls))
	for i, u := range urls {
		keys[i] = urlnorm.Key(u)
		if res, _, err := s.AdmitIn(ctx, crawl, group, keys[i], u, u, 0, "L"); err != nil || res != Admitted {
			t.Fatalf("AdmitIn %s = %v, %v", u, res, err)
		}
	}
	if got, err := s.ClaimGroup(ctx, crawl, group, outs[0].Owner, nil, time.Minute, keys); err != nil || len(got) != len(keys) {
		t.Fatalf("ClaimGroup = %v, %v", got, err)
	}
	if lost, err := s.Record(ctx, crawl, group, outs); err != nil || len(lost) != 0 {
		t.Fatalf("Record = %v, %v", lost, err)
	}
	return keys
}

// testAFileIDTakenByAnotherFile: a group's second WARC file whose id in the item is the first
// one's is named in full by its outcomes; both files' pages read back as recorded, by Get and
// EachURL.
func testAFileIDTakenByAnotherFile(t *testing.T, tb table.Table) {
	ctx := context.Background()
	s := New(tb)
	crawl := crawlName(t)
	first, second := clashingBatches()
	urls, outs := tenPages(crawl, "M")
	for i := range outs {
		p := *outs[i].Page
		batch := first
		if i >= 5 {
			batch, outs[i].Owner = second, "N"
		}
		p.WARCKey = "pages/" + crawl + "/" + batch + ".warc.gz"
		p.Msg = message.PartName(p.WARCKey, 0)
		outs[i].Page = &p
	}
	recordTogether(t, s, crawl, "G", urls[:5], outs[:5])
	keys := recordTogether(t, s, crawl, "G", urls[5:], outs[5:])
	it, err := tb.Get(ctx, groupKey(crawl, "G"))
	if err != nil {
		t.Fatal(err)
	}
	if got := it.String(fileAttr(fileID(first))); got != first {
		t.Errorf("the item's file %s holds %q, want the first file %q", fileID(first), got, first)
	}
	if raw := it.String(outcomeAttr(keys[0])); !strings.Contains(raw, second) {
		t.Errorf("an outcome of the second file is %q, want its file named in full", raw)
	}
	byScan := map[string]URL{}
	if err := s.EachURL(ctx, crawl, func(u URL) error { byScan[u.Key] = u; return nil }); err != nil {
		t.Fatal(err)
	}
	byGet := getEach(t, s, crawl, append(keys, urlnorm.Key(urls[0])))
	for _, o := range outs {
		for how, got := range map[string]map[string]URL{"Get": byGet, "EachURL": byScan} {
			if u, ok := got[o.Key]; ok && (u.Page == nil || !reflect.DeepEqual(*u.Page, *o.Page)) {
				t.Errorf("%s: %s reads back %+v, want %+v", how, o.URL, u.Page, *o.Page)
			}
		}
	}
}

// clashingBatches are two WARC files' <day>/<batch> names whose ids in a group's item are one.
func clashingBatches() (string, string) {
	seen := map[string]string{}
	for i := 0; ; i++ {
		b := "2026/12/05/batch" + strconv.Itoa(i)
		if other, ok := seen[fileID(b)]; ok {
			return other, b
		}
		seen[fileID(b)] = b
	}
}
