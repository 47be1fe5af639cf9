package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// crashingProgress fails the checkpoint write named by crashAt (its 1-based count): the crash
// "after a chunk's Links messages are sent and named, before its checkpoint is written".
type crashingProgress struct {
	*crawlstate.Store
	saves   atomic.Int32
	crashAt int32
}

func (c *crashingProgress) SaveSeedProgress(ctx context.Context, crawl string, from, to crawlstate.SeedProgress) (bool, error) {
	if c.saves.Add(1) == c.crashAt {
		return false, errors.New("injected crash before the checkpoint")
	}
	return c.Store.SaveSeedProgress(ctx, crawl, from, to)
}

// A seed file of 50,000 lines (10,000 under the race detector, in chunks of 16 KiB: as many chunks
// in a fifth of the time), read in chunks of 64 KiB with a budget that lets an invocation take
// one chunk, takes many invocations, each sending the notification on; a crash between a chunk's
// sends and its checkpoint makes the redelivery send that chunk again, and nothing else twice.
// Every seed reaches the schedule queue, the frontier admits each exactly once, and the report
// lists every bad line with its line number in the whole file, with the first 10 alone logged.
// A clock that spends a second at each look makes the budget run out after every chunk.
func TestALargeSeedFileIsReadInChunksWithACheckpoint(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	lines, chunkBytes, badEvery := 50_000, 64<<10, 997
	if raceEnabled {
		lines, chunkBytes, badEvery = 10_000, 16<<10, 331 // more bad lines than are logged
	}
	var b strings.Builder
	var badLines []int
	for i := 1; i <= lines; i++ {
		if i%badEvery == 0 {
			fmt.Fprintf(&b, "not a url %d\n", i)
			badLines = append(badLines, i)
			continue
		}
		fmt.Fprintf(&b, "http://h%d.example.test/page/%d\n", i%50, i)
	}
	e.put("seeds/big.txt", b.String())
	good := lines - len(badLines)

	prog := &crashingProgress{Store: e.state, crashAt: 3}
	clock := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Second); return clock } // each look at the clock spends a second
	front := frontier.New(frontier.Config{Rules: scope.DefaultRules(), FetchQueue: fetchQ}, frontierDeps(e.state, frontier.Deps{Send: e.q}))
	h := scheduler.New(scheduler.Config{ScheduleQueue: scheduleQ, Concurrency: 1, SeedChunkBytes: chunkBytes, SeedBudget: time.Second},
		scheduler.Deps{Admit: front, Starts: front, Blobs: e.blobs, Send: e.q, Log: slog.New(slog.NewTextHandler(e.logs, nil)), Links: e.state, Progress: prog, Now: now})

	var ev events.S3Event
	ev.Records = make([]events.S3EventRecord, 1)
	ev.Records[0].EventName = "ObjectCreated:Put"
	ev.Records[0].S3.Bucket.Name, ev.Records[0].S3.Object.Key, ev.Records[0].S3.Object.Sequencer = "bucket", "seeds/big.txt", "0A1B"
	raw, _ := json.Marshal(ev)
	crawl := scheduler.CrawlID("bucket", "seeds/big.txt", "0A1B")

	// The schedule queue plays Lambda: each notification is one invocation; a failed one is
	// delivered again; Links messages are admitted as they come.
	pending := []string{string(raw)}
	invocations, failed, sent := 0, 0, map[string]int{}
	for len(pending) > 0 && invocations < 1000 {
		body := pending[0]
		pending = pending[1:]
		invocations++
		resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: fmt.Sprint("m", invocations), Body: body,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) > 0 {
			failed++
			pending = append(pending, body) // redelivered after its visibility timeout
		}
		for _, m := range take(t, e) {
			if strings.Contains(m, `"Records"`) {
				pending = append(pending, m)
				continue
			}
			l, err := message.DecodeLinks(m)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range l.URLs {
				sent[u]++
			}
			if resp, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "l", Body: m,
				Attributes: map[string]string{"ApproximateReceiveCount": "1"}}}}); err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("admit: %v, %v", resp.BatchItemFailures, err)
			}
		}
	}
	chunks := (b.Len() + chunkBytes - 1) / chunkBytes
	if failed != 1 || invocations < chunks {
		t.Errorf("%d invocations, %d failed; want one crash and at least one invocation for each of the %d chunks", invocations, failed, chunks)
	}
	twice := 0
	for _, n := range sent {
		if n > 1 {
			twice++
		}
	}
	if len(sent) != good || twice == 0 || twice > 64<<10/20 {
		t.Errorf("%d distinct seeds sent, %d of them twice; want all %d, and the crashed chunk's alone twice", len(sent), twice, good)
	}
	c, err := e.state.Counters(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if c.Seen != int64(good) {
		t.Errorf("%d URLs admitted; want each of the %d seeds once", c.Seen, good)
	}
	rep, err := e.blobs.Get(ctx, scheduler.ReportsPrefix+crawl+"/seeds.json")
	if err != nil {
		t.Fatal(err)
	}
	var r scheduler.SeedReport
	if err := json.Unmarshal(rep, &r); err != nil {
		t.Fatal(err)
	}
	var gotLines []int
	for _, bl := range r.Bad {
		gotLines = append(gotLines, bl.Line)
		if bl.Text != fmt.Sprintf("not a url %d", bl.Line) {
			t.Errorf("bad line %d reads %q", bl.Line, bl.Text)
		}
	}
	if r.Reading || r.Accepted != good || r.Errors != len(badLines) || fmt.Sprint(gotLines) != fmt.Sprint(badLines) {
		t.Errorf("report: reading %v, %d accepted, %d errors, lines %v; want done, %d, %d, %v", r.Reading, r.Accepted, r.Errors, gotLines, good, len(badLines), badLines)
	}
	// The first 10 bad lines alone are logged (the crashed chunk's again, as it is read again).
	logged := map[string]bool{}
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "bad seed line") {
			logged[regexp.MustCompile(` line=\d+`).FindString(l)] = true
		}
	}
	want := map[string]bool{}
	for _, n := range badLines[:scheduler.MaxLoggedBadLines] {
		want[fmt.Sprintf(" line=%d", n)] = true
	}
	if !maps.Equal(logged, want) {
		t.Errorf("bad lines logged: %v; want the first %d: %v", logged, scheduler.MaxLoggedBadLines, want)
	}
}

// take receives and deletes every visible message of the schedule queue, as Lambda deletes a
// message its invocation handled (drain leaves them, to come back after a minute: a run under
// the race detector takes longer than that).
func take(t *testing.T, e *env) []string {
	t.Helper()
	var bodies []string
	for {
		msgs, err := e.q.Receive(context.Background(), scheduleQ, queue.MaxBatch, time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return bodies
		}
		for _, m := range msgs {
			if err := e.q.Delete(context.Background(), scheduleQ, m.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, m.Body)
		}
	}
}
