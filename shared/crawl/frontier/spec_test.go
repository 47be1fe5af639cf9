package frontier

import (
	"context"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
)

// crawlsFunc gives each crawl its settings from a function.
type crawlsFunc func(crawl string) *crawlspec.Crawl

func (f crawlsFunc) For(_ context.Context, crawl string) (*crawlspec.Crawl, error) {
	return f(crawl), nil
}

// Each crawl is admitted with its own spec's scope, pages and rate; a crawl without a spec with
// the frontier's own.
func TestEachCrawlIsAdmittedWithItsOwnSettings(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	snd := &fakeSender{}
	rate, pages := 0.25, 2
	spec := &crawlspec.Settings{Version: 1, Rate: &rate, MaxPages: &pages}
	f := New(Config{Rules: scope.DefaultRules(), FetchQueue: "fetch", HostInterval: time.Second}, withState(st, Deps{Send: snd, Log: quiet(),
		Crawls: crawlsFunc(func(crawl string) *crawlspec.Crawl {
			base := crawlspec.Crawl{Rules: scope.DefaultRules(), HostRPS: 1}
			if crawl == "with-spec" {
				c, err := spec.Over(base)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			return &base
		})}))
	urls := []string{"http://a.test/1", "http://a.test/2", "http://a.test/3"}
	for _, crawl := range []string{"with-spec", "without"} {
		res, err := f.Admit(ctx, &message.Links{Header: message.Header{Crawl: crawl}, URLs: urls})
		if err != nil {
			t.Fatal(err)
		}
		want := 3
		if crawl == "with-spec" {
			want = 2 // the spec's max_pages
		}
		if res.Sent != want {
			t.Errorf("%s: %+v, want %d sent", crawl, res, want)
		}
	}
	// Every URL of a crawl carries a politeness slot booked at its crawl's rate.
	gaps := map[string]map[int64]int{}
	for _, b := range snd.bodies {
		m, err := message.DecodeFetch(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m.Split() {
			if gaps[m.Crawl] == nil {
				gaps[m.Crawl] = map[int64]int{}
			}
			gaps[m.Crawl][p.Gap]++
		}
	}
	if gaps["with-spec"][4000] != 2 || len(gaps["with-spec"]) != 1 || gaps["without"][1000] != 3 || len(gaps["without"]) != 1 {
		t.Errorf("slot gaps by crawl (ms) %v, want 4000 for the spec's rate of 0.25/s and 1000 for the stack's", gaps)
	}
}
