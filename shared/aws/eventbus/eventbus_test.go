package eventbus

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/refusal"
)

// No EventBridge emulator runs on these machines (none is listed among the emulators tried), so
// the real SDK client talks to a server that stands in for the EventBridge endpoint: the test holds
// the request the client sends to what the PutEvents API reference documents (AWS JSON 1.1,
// target AWSEvents.PutEvents, one entry), and the answers to what the bus makes of them.

// endpoint is a stand-in EventBridge endpoint that keeps each request's target and body and
// answers with answer (status and body).
type endpoint struct {
	mu      sync.Mutex
	targets []string
	bodies  [][]byte
	status  int
	answer  string
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.targets = append(e.targets, r.Header.Get("X-Amz-Target"))
	e.bodies = append(e.bodies, b)
	status, answer := e.status, e.answer
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	io.WriteString(w, answer)
}

func newBus(t *testing.T, e *endpoint) *Bus {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	client := eventbridge.New(eventbridge.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint:     aws.String(srv.URL),
		RetryMaxAttempts: 1,
	})
	return New(client, "")
}

func sample() finish.Event {
	return finish.Event{EventID: finish.EventID("site-0a1b2c3d4e5f"), Crawl: "site-0a1b2c3d4e5f", End: finish.EndDrained,
		FinishedAt: time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC),
		Counts:     finish.Counts{Seen: 12, Fetched: 10, Skipped: 2, Classes: map[string]int64{"robots": 2}}, CostUSD: 0.0004}
}

func TestPublishPutsOneEntryOnTheDefaultBus(t *testing.T) {
	e := &endpoint{status: 200, answer: `{"Entries":[{"EventId":"11111111-2222-3333-4444-555555555555"}],"FailedEntryCount":0}`}
	if err := newBus(t, e).Publish(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	if len(e.bodies) != 1 || e.targets[0] != "AWSEvents.PutEvents" {
		t.Fatalf("%d requests, targets %v: want one AWSEvents.PutEvents", len(e.bodies), e.targets)
	}
	var in struct {
		Entries []struct {
			EventBusName, Source, DetailType, Detail string
			Time                                     float64
		}
	}
	if err := json.Unmarshal(e.bodies[0], &in); err != nil {
		t.Fatalf("request body %s: %v", e.bodies[0], err)
	}
	if len(in.Entries) != 1 {
		t.Fatalf("%d entries, want 1: %s", len(in.Entries), e.bodies[0])
	}
	en := in.Entries[0]
	if en.EventBusName != "default" || en.Source != "crawlstack" || en.DetailType != "Crawl Finished" {
		t.Errorf("bus %q, source %q, detail-type %q: want default, crawlstack, Crawl Finished", en.EventBusName, en.Source, en.DetailType)
	}
	if want := float64(sample().FinishedAt.Unix()); en.Time != want {
		t.Errorf("time %v, want %v (the crawl's end)", en.Time, want)
	}
	var got finish.Event
	if err := json.Unmarshal([]byte(en.Detail), &got); err != nil {
		t.Fatalf("detail %s: %v", en.Detail, err)
	}
	if got.EventID != "crawlstack:site-0a1b2c3d4e5f:finished" || got.Counts.Fetched != 10 || got.Counts.Classes["robots"] != 2 || got.End != "drained" {
		t.Errorf("detail = %+v", got)
	}
}

// A stall goes the same way, as a "Crawl Stalled" event whose detail names what is stuck.
func TestPublishPutsAStallAsCrawlStalled(t *testing.T) {
	e := &endpoint{status: 200, answer: `{"Entries":[{"EventId":"1"}],"FailedEntryCount":0}`}
	ev := sample()
	ev.EventID, ev.End = finish.StallID(ev.Crawl, 61), finish.EndStalled
	ev.Stuck = &finish.Stuck{UnadmittedLinks: 1, DeadLetterQueues: []string{"schedule"}}
	if err := newBus(t, e).Publish(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	var in struct {
		Entries []struct{ DetailType, Detail string }
	}
	if err := json.Unmarshal(e.bodies[0], &in); err != nil || len(in.Entries) != 1 {
		t.Fatalf("request body %s: %v", e.bodies[0], err)
	}
	var got finish.Event
	if err := json.Unmarshal([]byte(in.Entries[0].Detail), &got); err != nil {
		t.Fatal(err)
	}
	if in.Entries[0].DetailType != "Crawl Stalled" || got.EventID != "crawlstack:site-0a1b2c3d4e5f:stalled:61" || got.Stuck == nil ||
		got.Stuck.UnadmittedLinks != 1 || got.Stuck.DeadLetterQueues[0] != "schedule" {
		t.Errorf("detail-type %q, detail %s; want Crawl Stalled naming one Links message and the schedule DLQ", in.Entries[0].DetailType, in.Entries[0].Detail)
	}
}

func TestPublishFailsWhenTheEntryIsRefused(t *testing.T) {
	// PutEvents answers 200 with the entry's own error code when it refuses an entry.
	e := &endpoint{status: 200, answer: `{"Entries":[{"ErrorCode":"InternalFailure","ErrorMessage":"try again"}],"FailedEntryCount":1}`}
	err := newBus(t, e).Publish(context.Background(), sample())
	if err == nil || !strings.Contains(err.Error(), "InternalFailure") || !strings.Contains(err.Error(), "site-0a1b2c3d4e5f") {
		t.Fatalf("err = %v, want the refusal with its code and the crawl", err)
	}
}

func TestPublishFailsOnAnErrorAnswer(t *testing.T) {
	e := &endpoint{status: 400, answer: `{"__type":"AccessDeniedException","message":"not authorized to perform: events:PutEvents"}`}
	err := newBus(t, e).Publish(context.Background(), sample())
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("err = %v, want the access denied error", err)
	}
}

// A refused seed file is put as a "Seed File Refused" event of the crawler's source, its detail
// the refusal with its reasons and the key of the seed report; a refused entry is an error that
// names the seed file.
func TestPublishRefusalPutsASeedFileRefusedEvent(t *testing.T) {
	e := &endpoint{status: 200, answer: `{"Entries":[{"EventId":"1"}],"FailedEntryCount":0}`}
	at := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	ev := refusal.New("big-0a1b2c3d4e5f", "seeds/big.yaml", true, at, 2,
		[]refusal.Reason{{Line: 3, Error: "line 3: max_pages: 5000 is over the stack's 1000"}, {Line: 4, Error: "line 4: max_depth: x"}})
	if err := newBus(t, e).PublishRefusal(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	var in struct {
		Entries []struct {
			EventBusName, Source, DetailType, Detail string
			Time                                     float64
		}
	}
	if err := json.Unmarshal(e.bodies[0], &in); err != nil || len(in.Entries) != 1 {
		t.Fatalf("request body %s: %v", e.bodies[0], err)
	}
	en := in.Entries[0]
	if en.EventBusName != "default" || en.Source != "crawlstack" || en.DetailType != "Seed File Refused" || en.Time != float64(at.Unix()) {
		t.Errorf("bus %q, source %q, detail-type %q, time %v: want default, crawlstack, Seed File Refused, %d",
			en.EventBusName, en.Source, en.DetailType, en.Time, at.Unix())
	}
	var got struct {
		EventID, Crawl, SeedFile, Report string
		Spec                             bool
		Errors                           int
		Reasons                          []struct {
			Line  int
			Error string
		}
	}
	if err := json.Unmarshal([]byte(en.Detail), &got); err != nil {
		t.Fatal(err)
	}
	if got.EventID != "crawlstack:big-0a1b2c3d4e5f:refused" || got.SeedFile != "seeds/big.yaml" || !got.Spec || got.Errors != 2 ||
		len(got.Reasons) != 2 || got.Reasons[0].Line != 3 || !strings.Contains(got.Reasons[0].Error, "max_pages") ||
		got.Report != "crawls/big-0a1b2c3d4e5f/seeds.json" {
		t.Errorf("detail %s", en.Detail)
	}

	e.answer = `{"Entries":[{"ErrorCode":"InternalFailure","ErrorMessage":"try again"}],"FailedEntryCount":1}`
	if err := newBus(t, e).PublishRefusal(context.Background(), ev); err == nil || !strings.Contains(err.Error(), "InternalFailure") ||
		!strings.Contains(err.Error(), "seeds/big.yaml") {
		t.Errorf("err = %v, want the refusal of the entry, naming the seed file", err)
	}
}
