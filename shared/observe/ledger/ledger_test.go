package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/observe/meter"
)

// books records what the ledger adds.
type books struct {
	mu      sync.Mutex
	units   map[string]cost.Units
	flushes int
}

func (b *books) AddCost(_ context.Context, crawl string, u cost.Units) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.units == nil {
		b.units = map[string]cost.Units{}
	}
	b.units[crawl] = b.units[crawl].Add(u)
	return nil
}

func (b *books) Flush(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushes++
	return nil
}

// fakeDynamo answers every call with one write unit consumed.
func fakeDynamo(t *testing.T) *dynamodb.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{"ConsumedCapacity":{"TableName":"t","CapacityUnits":1.0}}`)
	}))
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1}
	meter.New().Register(&cfg)
	return dynamodb.NewFromConfig(cfg)
}

func put(ctx context.Context, c *dynamodb.Client) error {
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"),
		Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}})
	return err
}

func record(crawl string) events.SQSMessage {
	return events.SQSMessage{Body: `{"v":1,"kind":"fetch","crawl":"` + crawl + `","url":"http://a.test/"}`}
}

func TestAnInvocationIsBookedToItsCrawls(t *testing.T) {
	db := fakeDynamo(t)
	b := &books{}
	logs := &LogCounter{}
	log := slog.New(logs.Handler(slog.NewTextHandler(io.Discard, nil)))
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &Ledger{State: b, MemoryMB: 1024, Logs: logs, ReportBytes: LambdaReportBytes, Log: log, Now: func() time.Time { return clock }}
	h := l.Wrap(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for range 3 {
			if err := put(ctx, db); err != nil {
				return events.SQSEventResponse{}, err
			}
		}
		log.Info("batch done", "records", len(ev.Records))
		clock = clock.Add(1500 * time.Millisecond)
		return events.SQSEventResponse{}, nil
	})
	poison := events.SQSMessage{Body: "not json"}
	if _, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{record("a"), poison, record("b"), record("a")}}); err != nil {
		t.Fatal(err)
	}
	a, bb := b.units["a"], b.units["b"]
	if math.Abs(a.DynamoDBWriteUnits-2) > 1e-9 || math.Abs(bb.DynamoDBWriteUnits-1) > 1e-9 {
		t.Errorf("write units: a %v, b %v; want 2 and 1 (3 shared by 2 records to 1)", a.DynamoDBWriteUnits, bb.DynamoDBWriteUnits)
	}
	sum := a.Add(bb)
	if sum.LambdaRequests != 1 || math.Abs(sum.LambdaGBSeconds-1.5) > 1e-6 {
		t.Errorf("lambda: %d requests, %v GB-s; want 1 and 1.5 (1.5 s at 1 GB)", sum.LambdaRequests, sum.LambdaGBSeconds)
	}
	if sum.LogBytes <= LambdaReportBytes {
		t.Errorf("log bytes %d: want Lambda's %d and the handler's line", sum.LogBytes, LambdaReportBytes)
	}
	if b.flushes != 1 {
		t.Errorf("%d flushes, want 1", b.flushes)
	}
}

// Invocations that run at once on the same clients each book their own calls.
func TestConcurrentInvocationsBookTheirOwnCalls(t *testing.T) {
	db := fakeDynamo(t)
	b := &books{}
	l := &Ledger{State: b}
	var started sync.WaitGroup
	started.Add(2)
	h := l.Wrap(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		started.Done()
		started.Wait() // both invocations are in flight before either calls
		n, _ := strconv.Atoi(ev.Records[0].MessageId)
		for range n {
			if err := put(ctx, db); err != nil {
				return events.SQSEventResponse{}, err
			}
		}
		return events.SQSEventResponse{}, nil
	})
	var wg sync.WaitGroup
	for crawl, n := range map[string]string{"one": "1", "five": "5"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := record(crawl)
			r.MessageId = n
			if _, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{r}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if one, five := b.units["one"].DynamoDBWriteUnits, b.units["five"].DynamoDBWriteUnits; one != 1 || five != 5 {
		t.Errorf("write units: one %v, five %v; want 1 and 5", one, five)
	}
	if u := b.units["one"].Add(b.units["five"]); u.LambdaRequests != 0 || u.LogBytes != 0 {
		t.Errorf("a ledger with no memory and no log counter booked %+v", u)
	}
}

// TestAPolledBatchBooksItsReceivesAndDeletes: a batch from an event source mapping is booked the
// receives that gathered it and the deletes of its successes (10 messages a request), which the
// handler never sees; one run by crawl run's embedded queue (Polled false) books none. The
// invocation's line says what it spent.
func TestAPolledBatchBooksItsReceivesAndDeletes(t *testing.T) {
	recs := make([]events.SQSMessage, 23)
	for i := range recs {
		recs[i] = record("a")
		recs[i].MessageId = strconv.Itoa(i)
	}
	tests := []struct {
		name     string
		polled   bool
		failures int
		err      error
		want     int64
	}{
		// 23 records of a batch of up to 100: 3 receives and the one that found no more; 23
		// deleted: 3 DeleteMessageBatch; 11 deleted: 2; none: 0.
		{"all succeed", true, 0, nil, 7},
		{"12 fail", true, 12, nil, 6},
		{"the invocation fails", true, 0, errors.New("boom"), 4},
		{"not polled", false, 0, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &books{}
			var line strings.Builder
			l := &Ledger{State: b, Polled: tt.polled, BatchSize: 100, Log: slog.New(slog.NewJSONHandler(&line, nil))}
			h := l.Wrap(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				var resp events.SQSEventResponse
				for i := range tt.failures {
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
				}
				return resp, tt.err
			})
			_, _ = h(context.Background(), events.SQSEvent{Records: recs})
			if got := b.units["a"].SQSRequests; got != tt.want {
				t.Errorf("%d SQS requests booked, want %d", got, tt.want)
			}
			var doc struct {
				Msg     string
				Records int
				Crawl   string
				USD     float64
				Units   struct{ SQS int64 }
			}
			if err := json.Unmarshal([]byte(line.String()), &doc); err != nil {
				t.Fatalf("%v: %q", err, line.String())
			}
			if doc.Msg != "invocation" || doc.Records != 23 || doc.Crawl != "a" || doc.Units.SQS != tt.want ||
				math.Abs(doc.USD-float64(tt.want)*0.40/1e6) > 1e-15 {
				t.Errorf("line %s: want the invocation's 23 records of crawl a, its %d requests and their price", line.String(), tt.want)
			}
		})
	}
}
