package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	samples "github.com/crawlstack/crawlstack/events"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
)

// linksLeft is how many Links messages the crawl's end would wait for.
func (e *env) linksLeft(crawl string) int64 {
	e.t.Helper()
	_, left, err := e.state.Drained(context.Background(), crawl)
	if err != nil {
		e.t.Fatal(err)
	}
	return left.Links
}

// asEvent is the schedule queue's messages as one SQS batch.
func asEvent(bodies []string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), Body: b})
	}
	return ev
}

// A seed file's Links messages are named before the crawl's first check, and each Links message
// is marked admitted once its URLs are: the crawl's end waits for them in between.
func TestLinksMessagesAreNamedAndMarkedAdmitted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.put("seeds/my seeds.txt", seedFile)
	if _, err := e.h.Invoke(ctx, sample(t, samples.S3PutSeed)); err != nil {
		t.Fatal(err)
	}
	crawl := scheduler.CrawlID("crawlstack-crawl", "seeds/my seeds.txt", "0065670E2A6F5F7B38")
	bodies := e.drain(scheduleQ)
	if len(bodies) == 0 {
		t.Fatal("no seed links messages sent")
	}
	if n := e.linksLeft(crawl); n != int64(len(bodies)) {
		t.Fatalf("%d links messages left after the seeds went out, want their %d", n, len(bodies))
	}
	resp, err := e.h.Handle(ctx, asEvent(bodies))
	if err != nil || len(failures(resp)) != 0 {
		t.Fatalf("Handle = %v, %v", failures(resp), err)
	}
	if n := e.linksLeft(crawl); n != 0 {
		t.Errorf("%d links messages left once schedule admitted them, want none", n)
	}
}

// failingLinks fails every mark of Links messages admitted.
type failingLinks struct{}

func (failingLinks) NoteLinksSent(context.Context, string, string, []string) error { return nil }
func (failingLinks) MarkLinksAdmitted(context.Context, string, []string) error {
	return errors.New("injected failure")
}

// A Links message whose mark of admission fails is delivered again, to be marked then.
func TestALinksMessageNotMarkedAdmittedComesAgain(t *testing.T) {
	e := newEnv(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	front := frontier.New(frontier.Config{Rules: scope.DefaultRules(), FetchQueue: fetchQ}, frontierDeps(e.state, frontier.Deps{Send: e.q, Log: log}))
	h := scheduler.New(scheduler.Config{ScheduleQueue: scheduleQ},
		scheduler.Deps{Admit: front, Starts: front, Blobs: e.blobs, Send: e.q, Log: log, Links: failingLinks{}})
	body, err := message.Encode(message.Links{Header: message.Header{Crawl: "c1"}, Root: "http://example.test/",
		URLs: []string{"http://example.test/", "http://example.test/a"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), asEvent([]string{body}))
	if err != nil {
		t.Fatal(err)
	}
	if got := failures(resp); len(got) != 1 || got[0] != "m0" {
		t.Errorf("BatchItemFailures = %v, want [m0]", got)
	}
}
