package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
)

// TestListShowsARefusedSeedFileWithItsReason: a spec over the stack's page bound, read by the
// schedule handler as on AWS, starts no crawl; crawl list shows its seed file as refused with the
// first error of its seed report, in text and in JSON, beside a crawl that started.
func TestListShowsARefusedSeedFileWithItsReason(t *testing.T) {
	state := t.TempDir()
	be, err := OpenEmbedded(state)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := be.Setup(ctx, QueueSettings{Visibility: time.Minute, MaxReceiveCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	cfg := pipeline.DefaultConfig()
	cfg.ScheduleQueue, cfg.FetchQueue, cfg.ParseQueue = res.Schedule, res.Fetch, res.Parse
	cfg.MaxPages = pipeline.StackMaxPages
	h, err := pipeline.New(cfg, pipeline.Ports{Queue: be.Queue, Table: be.Table, Blobs: be.Blobs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, body := range map[string]string{
		"seeds/big.yaml": "version: 1\nseeds: [http://127.0.0.1:9/]\nmax_pages: 999999\n",
		"seeds/ok.txt":   "http://127.0.0.1:9/\n",
	} {
		if err := be.Blobs.Put(ctx, key, []byte(body), "text/plain"); err != nil {
			t.Fatal(err)
		}
	}
	for key, crawl := range map[string]string{"seeds/big.yaml": "big-1", "seeds/ok.txt": "ok-1"} {
		if err := h.Schedule.StartCrawl(ctx, key, crawl); err != nil {
			t.Fatal(err)
		}
	}
	b, err := be.Blobs.Get(ctx, "crawls/big-1/seeds.json")
	if err != nil {
		t.Fatal(err)
	}
	var report scheduler.SeedReport
	if err := json.Unmarshal(b, &report); err != nil || report.Errors != 1 || !strings.Contains(report.Bad[0].Error, "max_pages") {
		t.Fatalf("seed report %s (%v): want the page bound's error", b, err)
	}
	h.Close()
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runMain(t, "list", "--state", state)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var big, ok string
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "big-1 "):
			big = line
		case strings.HasPrefix(line, "ok-1 "):
			ok = line
		}
	}
	if !strings.Contains(big, " refused ") || !strings.HasSuffix(big, "seeds/big.yaml refused: "+report.Bad[0].Error) {
		t.Errorf("the refused spec's line %q, want it refused with %q:\n%s", big, report.Bad[0].Error, stdout)
	}
	if ok == "" || strings.Contains(ok, "refused") || !strings.HasSuffix(ok, "seeds/ok.txt") {
		t.Errorf("the started crawl's line %q:\n%s", ok, stdout)
	}

	code, stdout, stderr = runMain(t, "list", "--state", state, "--json")
	var got []struct {
		Crawl, State, SeedFile, Reason string
		RefusedErrors                  int
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != ExitOK || err != nil {
		t.Fatalf("exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	found := false
	for _, c := range got {
		if c.Crawl == "big-1" {
			found = c.State == "refused" && c.SeedFile == "seeds/big.yaml" && c.RefusedErrors == 1 && c.Reason == report.Bad[0].Error
		}
	}
	if !found {
		t.Errorf("list --json %s: want big-1 refused with its reason", stdout)
	}
}
