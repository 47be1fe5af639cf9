package e2etest

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// DeadLetterQueue is what CheckRedriveByClass needs of a backend's queues.
type DeadLetterQueue interface {
	queue.Sender
	queue.Receiver
}

// CheckRedriveByClass fills the fetch dead-letter queue with the messages of URLs recorded failed
// in several classes (one message alone per URL, one of two URLs, one that does not decode), runs
// `crawl redrive --class http_5xx fetch` with flags choosing the backend, and reads both queues
// back: exactly the http_5xx URLs are in the fetch queue, each alone, and the rest is in the
// dead-letter queue, visible again.
func CheckRedriveByClass(t testing.TB, main MainFunc, q DeadLetterQueue, tb table.Table, fetch, fetchDLQ string, flags ...string) {
	t.Helper()
	ctx := context.Background()
	const crawl = "redrive-by-class"
	st := crawlstate.New(tb)
	classes := map[string]errclass.Class{
		"http://a.test/5xx-alone": errclass.HTTP5xx, "http://a.test/4xx-alone": errclass.HTTP4xx,
		"http://a.test/timeout-pair": errclass.Timeout, "http://a.test/5xx-pair": errclass.HTTP5xx,
	}
	for u, c := range classes {
		key := urlKey(t, u)
		if _, err := st.Admit(ctx, crawl, key, u, "http://a.test/", 1, "L"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Claim(ctx, crawl, key, "m", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := st.FailRedrivable(ctx, crawl, key, "m", crawlstate.Queued, errclass.Errorf(c, "failed")); err != nil {
			t.Fatal(err)
		}
	}
	one := func(u string) string {
		b, err := message.Encode(message.Pack(crawl, []message.Target{{URL: u, Root: "http://a.test/", Depth: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pair, err := message.Encode(message.Pack(crawl, []message.Target{{URL: "http://a.test/timeout-pair", Root: "http://a.test/", Depth: 1},
		{URL: "http://a.test/5xx-pair", Root: "http://a.test/", Depth: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SendBatch(ctx, fetchDLQ, []queue.Entry{{ID: "1", Body: one("http://a.test/5xx-alone")},
		{ID: "2", Body: one("http://a.test/4xx-alone")}, {ID: "3", Body: pair}, {ID: "4", Body: "not a message"}}); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := main(append(append([]string{"redrive"}, flags...), "--class", "nope", "fetch")...); code != 2 ||
		!strings.Contains(stderr, "unknown class") {
		t.Errorf("redrive --class nope: exit %d, %s", code, stderr)
	}
	code, stdout, stderr := main(append(append([]string{"redrive"}, flags...), "--class", "http_5xx", "fetch")...)
	if code != 0 || !strings.Contains(stdout, "moved 2 URLs") || !strings.Contains(stdout, "3 URLs of other classes stay") {
		t.Fatalf("redrive --class http_5xx fetch: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	back, _ := drain(t, q, fetch, 2)
	if want := []string{"http://a.test/5xx-alone", "http://a.test/5xx-pair"}; strings.Join(back, " ") != strings.Join(want, " ") {
		t.Errorf("the fetch queue holds %v, want %v, each alone", back, want)
	}
	stay, bad := drain(t, q, fetchDLQ, 3)
	if want := []string{"http://a.test/4xx-alone", "http://a.test/timeout-pair"}; strings.Join(stay, " ") != strings.Join(want, " ") || bad != 1 {
		t.Errorf("the dead-letter queue holds %v and %d undecodable messages, want %v and 1", stay, bad, want)
	}
}

func urlKey(t testing.TB, raw string) string {
	t.Helper()
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	return urlnorm.Key(u.String())
}

// drain receives the queue's messages until want URLs and undecodable messages are in or a
// deadline passes, and returns the URLs (sorted; a fetch message of one URL each, or the test
// fails) and the count of undecodable messages.
func drain(t testing.TB, q DeadLetterQueue, addr string, want int) (urls []string, bad int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(urls)+bad < want && time.Now().Before(deadline) {
		msgs, err := q.Receive(context.Background(), addr, queue.MaxBatch, time.Minute, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			f, err := message.DecodeFetch(m.Body)
			if err != nil {
				bad++
				continue
			}
			if n := len(f.URLList()); n != 1 {
				t.Errorf("a message of %d URLs in %s: %v", n, addr, f.URLList())
			}
			urls = append(urls, f.URLList()...)
		}
	}
	sort.Strings(urls)
	return urls, bad
}
