package meter_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/crawlstack/crawlstack/shared/observe/meter"
)

func TestMeterConcurrent(t *testing.T) {
	m := meter.New()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				m.AddLambda(250*time.Millisecond, 512) // 0.25 s x 0.5 GB = 0.125 GB-s
				m.AddLogBytes(100)
				m.AddLogBytes(-5) // ignored
			}
		}()
	}
	wg.Wait()
	got := m.Snapshot()
	want := meter.Units{LambdaRequests: 1000, LambdaGBSeconds: 125, LogBytes: 100_000}
	if got != want {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
	}
}

func TestUnitsAddSub(t *testing.T) {
	a := meter.Units{SQSRequests: 3, DynamoDBReadUnits: 1.5, DynamoDBWriteUnits: 2, DynamoDBUnmetered: 1,
		S3ClassA: 4, S3ClassB: 5, LambdaRequests: 6, LambdaGBSeconds: 0.5, LogBytes: 7}
	b := meter.Units{SQSRequests: 1, DynamoDBReadUnits: 0.5, DynamoDBWriteUnits: 1, S3ClassA: 1, S3ClassB: 2,
		LambdaRequests: 3, LambdaGBSeconds: 0.25, LogBytes: 2}
	sum := meter.Units{SQSRequests: 4, DynamoDBReadUnits: 2, DynamoDBWriteUnits: 3, DynamoDBUnmetered: 1,
		S3ClassA: 5, S3ClassB: 7, LambdaRequests: 9, LambdaGBSeconds: 0.75, LogBytes: 9}
	if got := a.Add(b); got != sum {
		t.Errorf("Add = %+v, want %+v", got, sum)
	}
	if got := sum.Sub(b); got != a {
		t.Errorf("Sub = %+v, want %+v", got, a)
	}
}

func TestAPIOptionTwice(t *testing.T) {
	stack := middleware.NewStack("op", smithyhttp.NewStackRequest)
	m := meter.New()
	for i := range 2 {
		if err := m.APIOption(stack); err != nil {
			t.Fatalf("APIOption #%d: %v", i+1, err)
		}
	}
	if got := len(stack.Initialize.List()) + len(stack.Deserialize.List()); got != 2 {
		t.Errorf("stack holds %d middleware after installing one meter twice, want 2: %v %v",
			got, stack.Initialize.List(), stack.Deserialize.List())
	}
	if err := meter.New().APIOption(stack); err == nil || !strings.HasPrefix(err.Error(), "meter: another meter") {
		t.Errorf("a second meter's APIOption error = %v, want one saying another meter is installed", err)
	}
}
