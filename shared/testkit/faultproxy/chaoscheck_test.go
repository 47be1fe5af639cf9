package faultproxy_test

// The chaos crawl's oracles: each check reads the sites' counts, the emulators (straight, not
// through the proxy) or the proxy's view of what the emulators applied.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

// chaosCheck holds one run to its oracles.
type chaosCheck struct {
	t      *testing.T
	p      *faultproxy.Proxy
	calls  *callLog
	sites  []*e2etest.Site
	crawl  string
	bucket string
	direct clients
	// st reads the crawl's items straight from the emulator, to explain a failure.
	st *crawlstate.Store
}

// pageURLs are every page of every site.
func (c *chaosCheck) pageURLs() []string {
	var out []string
	for _, s := range c.sites {
		for i := range s.Pages {
			out = append(out, s.PageURL(i))
		}
	}
	return out
}

// faultsOn says, for a failure message, what the table holds of url (read straight from the
// emulator) and which faults hit its URL item and its group's item.
func (c *chaosCheck) faultsOn(url string) string {
	n, err := urlnorm.Normalize(url)
	if err != nil {
		return " (" + err.Error() + ")"
	}
	key := urlnorm.Key(n.String())
	keys := []table.Key{crawlstate.URLKey(c.crawl, key)}
	state := "no URL item"
	if u, err := c.st.Get(ctxT(c.t), c.crawl, key); err == nil {
		parsed, _ := c.st.PageParsed(ctxT(c.t), c.crawl, u)
		state = fmt.Sprintf("%s, parse mark %v, group %s", u.State, parsed, crawlstate.GroupOf(u))
		keys = append(keys, crawlstate.GroupKey(c.crawl, crawlstate.GroupOf(u)))
	}
	var b strings.Builder
	for _, f := range c.p.Faults() {
		for _, k := range keys {
			if strings.HasSuffix(f.Target, "pk="+k.Part+",sk="+k.Sort) {
				b.WriteString("\n      " + f.String())
				break
			}
		}
	}
	if b.Len() == 0 {
		return " [" + state + "; no fault hit its URL or group item: see the S3 and SQS faults in the log]"
	}
	return " [" + state + "] after the faults on its URL and group items:" + b.String()
}

// list names up to 20 URLs, with the faults on each.
func (c *chaosCheck) list(urls []string) string {
	sort.Strings(urls)
	var b strings.Builder
	for i, u := range urls {
		if i == 20 {
			fmt.Fprintf(&b, "\n    ... and %d more", len(urls)-20)
			break
		}
		b.WriteString("\n    " + u + c.faultsOn(u))
	}
	return b.String()
}

// drained: the run says the crawl finished, drained, with nothing pending, failed or dead.
func (c *chaosCheck) drained(sum cli.Summary) {
	if !sum.Finished || sum.Pending != 0 || sumDead(sum.DeadLetters) != 0 {
		c.t.Errorf("invariant 1 (the crawl ends drained): finished %v, %d pending, dead letters %v",
			sum.Finished, sum.Pending, sum.DeadLetters)
	}
	if sum.Event == nil || sum.Event.End != finish.EndDrained {
		c.t.Errorf("invariant 11: the run announced %+v, want a %q end", sum.Event, finish.EndDrained)
	}
}

// queuesEmpty: straight from the emulator, the run's six queues hold no message, visible, in
// flight or delayed.
func (c *chaosCheck) queuesEmpty(name string) {
	ctx := ctxT(c.t)
	var left []string
	for _, q := range []string{"schedule", "fetch", "parse", "schedule-dlq", "fetch-dlq", "parse-dlq"} {
		u, err := c.direct.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name + "-" + q)})
		if err != nil {
			c.t.Errorf("find queue %s: %v", q, err)
			continue
		}
		out, err := c.direct.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u.QueueUrl,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
				sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible, sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
		if err != nil {
			c.t.Errorf("depth of queue %s: %v", q, err)
			continue
		}
		for k, v := range out.Attributes {
			if v != "0" {
				left = append(left, fmt.Sprintf("%s %s=%s", q, k, v))
			}
		}
	}
	if len(left) > 0 {
		sort.Strings(left)
		c.t.Errorf("invariant 1 (the crawl ends drained): the queues, read straight from the emulator, still hold messages: %s", strings.Join(left, ", "))
	}
}

func sumDead(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// nothingLostOrTwice: by the sites' own counts, every page was requested, and none twice.
func (c *chaosCheck) nothingLostOrTwice() {
	var lost, twice []string
	for _, s := range c.sites {
		for i := range s.Pages {
			switch n := s.Hits(pathOf(s, i)); {
			case n == 0:
				lost = append(lost, s.PageURL(i))
			case n > 1:
				twice = append(twice, fmt.Sprintf("%s (%d requests)", s.PageURL(i), n))
			}
		}
		if n := s.Hits("/private/secret") + s.Hits("/p/nofollow-never-fetched"); n != 0 {
			c.t.Errorf("site %s: a robots-disallowed or nofollow page was requested %d times", s.URL, n)
		}
	}
	if len(lost) > 0 {
		c.t.Errorf("invariant 1 (no URL lost): %d pages were never requested:%s", len(lost), c.list(lost))
	}
	if len(twice) > 0 {
		urls := make([]string, len(twice))
		for i, u := range twice {
			urls[i], _, _ = strings.Cut(u, " ")
		}
		c.t.Errorf("invariant 2 (no duplicate fetches): %d pages were requested more than once: %v\n  their items:%s",
			len(twice), twice, c.list(urls))
	}
}

func pathOf(s *e2etest.Site, i int) string {
	return strings.TrimPrefix(s.PageURL(i), strings.TrimSuffix(s.URL, "/"))
}

// records: every page has a record in the bucket, read straight from the emulator.
func (c *chaosCheck) records() {
	ctx := ctxT(c.t)
	got := map[string]int{}
	prefix := layout.RecordsDir(c.crawl)
	var token *string
	for {
		list, err := c.direct.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(c.bucket), Prefix: aws.String(prefix), ContinuationToken: token})
		if err != nil {
			c.t.Fatalf("list %s: %v", prefix, err)
		}
		for _, o := range list.Contents {
			c.readRecords(ctx, aws.ToString(o.Key), got)
		}
		if !aws.ToBool(list.IsTruncated) {
			break
		}
		token = list.NextContinuationToken
	}
	var missing []string
	for _, u := range c.pageURLs() {
		if got[u] == 0 {
			missing = append(missing, u)
		}
	}
	if len(missing) > 0 {
		c.t.Errorf("invariants 1 and 10 (a record for every fetched page): %d of %d pages have no record under s3://%s/%s (%d records in all):%s",
			len(missing), len(c.pageURLs()), c.bucket, prefix, len(got), c.list(missing))
	}
}

func (c *chaosCheck) readRecords(ctx context.Context, key string, got map[string]int) {
	obj, err := c.direct.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key)})
	if err != nil {
		c.t.Fatalf("get %s: %v", key, err)
	}
	defer obj.Body.Close()
	sc := bufio.NewScanner(obj.Body)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var r struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			c.t.Errorf("a record in %s is not JSON: %v", key, err)
			continue
		}
		got[r.URL]++
	}
	if err := sc.Err(); err != nil {
		c.t.Errorf("read %s: %v", key, err)
	}
}

// counters: the crawl's counters (the run's summary, the live counters in the table, the end
// event's) equal the exact tally the sites give: each site's pages fetched, and its
// /private/secret either refused by parse before its admission (no item: the robots.txt rules
// came with the page that links it) or admitted and skipped by robots.txt (the page's parse
// message was sent again from its record, without the rules).
func (c *chaosCheck) counters(sum cli.Summary) {
	pages := int64(len(c.pageURLs()))
	var admitted int64
	for _, s := range c.sites {
		u, err := urlnorm.Normalize(s.URL + "private/secret")
		if err != nil {
			c.t.Fatal(err)
		}
		switch it, err := c.st.Get(ctxT(c.t), c.crawl, urlnorm.Key(u.String())); {
		case errors.Is(err, table.ErrNotFound):
		case err == nil && it.State == crawlstate.Skipped && it.Class == errclass.Robots:
			admitted++
		default:
			c.t.Errorf("%s: %+v, %v; want no item (refused by parse) or skipped by robots.txt", u, it, err)
		}
	}
	if admitted < int64(len(c.sites)) && sum.RobotsRefused == 0 {
		c.t.Errorf("%d of the %d sites' /private/secret were not admitted, and no link is counted refused by robots.txt",
			int64(len(c.sites))-admitted, len(c.sites))
	}
	want := finish.Counts{Seen: pages + admitted, Fetched: pages, Skipped: admitted}
	check := func(what string, seen, fetched, skipped, failed int64) {
		if seen != want.Seen || fetched != want.Fetched || skipped != want.Skipped || failed != 0 {
			c.t.Errorf("invariant 10 (the counters count once, and equal the tally): %s: seen %d, fetched %d, skipped %d, failed %d; the sites say seen %d, fetched %d, skipped %d (robots), failed 0",
				what, seen, fetched, skipped, failed, want.Seen, want.Fetched, want.Skipped)
		}
	}
	check("the run's summary", sum.Seen, sum.Fetched, sum.Skipped, sum.Failed)
	if sum.Event != nil {
		e := sum.Event.Counts
		check("the end event", e.Seen, e.Fetched, e.Skipped, e.Failed)
	}
	live, err := c.st.Counters(ctxT(c.t), c.crawl)
	if err != nil {
		c.t.Errorf("read the live counters: %v", err)
		return
	}
	check("the live counters", live.Seen, live.Fetched, live.Skipped, live.Failed)
}

// oneEndAfterTheLastAdmission: the end event is in the bucket once (every PUT of it carried the
// same event), and the emulators applied its first PUT after the last URL item put and the last
// message sent to the fetch queue (an admission) and to the schedule queue (a page's links).
func (c *chaosCheck) oneEndAfterTheLastAdmission(sum cli.Summary) {
	key := layout.Finished(c.crawl)
	ctx := ctxT(c.t)
	obj, err := c.direct.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key)})
	if err != nil {
		c.t.Errorf("invariant 11: no end event in s3://%s/%s: %v", c.bucket, key, err)
		return
	}
	body, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil {
		c.t.Fatal(err)
	}
	var env struct {
		DetailType string       `json:"detail-type"`
		Detail     finish.Event `json:"detail"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.DetailType != finish.DetailType ||
		env.Detail.EventID != finish.EventID(c.crawl) || env.Detail.End != finish.EndDrained {
		c.t.Errorf("invariant 11: the end event in the bucket is %s (%v), want crawl %s's drained end", body, err, c.crawl)
	}
	c.calls.mu.Lock()
	defer c.calls.mu.Unlock()
	var first time.Time
	bodies := map[[32]byte]bool{}
	for _, p := range c.calls.puts {
		if p.Target != c.bucket+"/"+key {
			continue
		}
		bodies[sha256.Sum256(p.Body)] = true
		if first.IsZero() || p.Answered.Before(first) {
			first = p.Answered
		}
	}
	if len(bodies) != 1 {
		c.t.Errorf("invariant 11 (the end is decided once): the end event was written %d different ways", len(bodies))
	}
	if first.IsZero() {
		return
	}
	var late []string
	// A URL item's target: "pk=c#<crawl>#<n>,sk=u#<key>" (crawlstate's keys.go).
	isURLItem := func(target string) bool {
		return strings.Contains(target, " pk=c#"+c.crawl+"#") && strings.Contains(target, ",sk=u#")
	}
	if !slices.ContainsFunc(c.calls.putItems, func(p faultproxy.Call) bool { return isURLItem(p.Target) }) ||
		!slices.ContainsFunc(c.calls.sends, func(s faultproxy.Call) bool { return strings.HasSuffix(s.Queue, "-fetch") }) {
		c.t.Errorf("the proxy saw no URL item put or no fetch message sent: it cannot tell when the last admission was")
	}
	for _, p := range c.calls.putItems {
		if p.Answered.After(first) && isURLItem(p.Target) {
			late = append(late, fmt.Sprintf("PutItem of URL item %s at %s, %v after the end", p.Target,
				p.Answered.Format("15:04:05.000"), p.Answered.Sub(first)))
		}
	}
	for _, s := range c.calls.sends {
		if s.Answered.After(first) && (strings.HasSuffix(s.Queue, "-fetch") || strings.HasSuffix(s.Queue, "-schedule")) {
			late = append(late, fmt.Sprintf("%s to %s at %s, %v after the end", s.Op, s.Target,
				s.Answered.Format("15:04:05.000"), s.Answered.Sub(first)))
		}
	}
	if len(late) > 0 {
		c.t.Errorf("invariant 11 (the end comes after the last admission): %d admissions (URL items, sends to the fetch or schedule queue) were applied after the end event was written at %s:\n  %s",
			len(late), first.Format("15:04:05.000"), strings.Join(late, "\n  "))
	}
}
