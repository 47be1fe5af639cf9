package specstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/specstore"
	"github.com/crawlstack/crawlstack/shared/local/fileblob"
	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// counting counts the reads of a blob store and can fail them.
type counting struct {
	blob.Store
	gets atomic.Int64
	fail error
}

func (c *counting) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	if c.fail != nil {
		return nil, c.fail
	}
	return c.Store.Get(ctx, key)
}

func open(t *testing.T) *counting {
	t.Helper()
	fs, err := fileblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &counting{Store: fs}
}

func TestEachCrawlIsReadOnceAndGetsItsSpecOverTheStack(t *testing.T) {
	ctx := context.Background()
	bl := open(t)
	rate, pages := 0.25, 40
	if err := specstore.Save(ctx, bl, "spec-crawl", &crawlspec.Settings{Version: 1, Rate: &rate, MaxPages: &pages, UserAgent: "mybot/1"}); err != nil {
		t.Fatal(err)
	}
	if err := specstore.Save(ctx, bl, "list-crawl", nil); err != nil {
		t.Fatal(err)
	}
	st := specstore.New(bl, crawlspec.Crawl{HostRPS: 2, MaxPages: 100, UserAgent: "crawlstack/0.1"})
	var wg sync.WaitGroup
	for range 20 { // concurrent first reads share one GET
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := st.For(ctx, "spec-crawl")
			if err != nil || c.HostRPS != 0.25 || c.MaxPages != 40 || c.UserAgent != "mybot/1" {
				t.Errorf("spec crawl: %+v, %v", c, err)
			}
		}()
	}
	wg.Wait()
	for _, crawl := range []string{"list-crawl", "never-started", "list-crawl", "never-started"} {
		c, err := st.For(ctx, crawl)
		if err != nil || c.HostRPS != 2 || c.MaxPages != 100 || c.UserAgent != "crawlstack/0.1" {
			t.Errorf("%s: %+v, %v; want the stack's settings", crawl, c, err)
		}
	}
	if n := bl.gets.Load(); n != 3 {
		t.Errorf("%d reads for three crawls, want one each", n)
	}
}

func TestAFailedReadIsAnErrorAndIsNotKept(t *testing.T) {
	ctx := context.Background()
	bl := open(t)
	st := specstore.New(bl, crawlspec.Crawl{})
	bl.fail = errors.New("slow down")
	if _, err := st.For(ctx, "c"); err == nil || !strings.Contains(err.Error(), "read the settings of crawl c: slow down") {
		t.Errorf("error %v", err)
	}
	bl.fail = nil
	pages := 5
	if err := specstore.Save(ctx, bl, "c", &crawlspec.Settings{Version: 1, MaxPages: &pages}); err != nil {
		t.Fatal(err)
	}
	if c, err := st.For(ctx, "c"); err != nil || c.MaxPages != 5 {
		t.Errorf("after the failure: %+v, %v", c, err)
	}
	// Settings that do not decode, or of another schema version, are errors.
	for body, want := range map[string]string{"{": "decode the settings", `{"version": 9}`: "schema version 9"} {
		if err := bl.Put(ctx, specstore.Key("bad"), []byte(body), "application/json"); err != nil {
			t.Fatal(err)
		}
		if _, err := specstore.New(bl, crawlspec.Crawl{}).For(ctx, "bad"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
}
