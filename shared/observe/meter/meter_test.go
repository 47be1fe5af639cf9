package meter_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

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
	want := cost.Units{LambdaRequests: 1000, LambdaGBSeconds: 125, LogBytes: 100_000}
	if got != want {
		t.Errorf("Snapshot = %+v, want %+v", got, want)
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
