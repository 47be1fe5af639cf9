package cost

import (
	"math"
	"testing"
	"time"
)

// TestRenderBatchPricesTheBrowsersTime: a batch of 5 pages of one message, each rendered in 2 s at
// 2048 MB, costs 20 GB-s of compute (the browser's time dominates: $0.000266 of its $0.000277), a
// Lambda request, a receive, a delete and a send, 5 GETs, half a read unit, and two PUTs with the
// index; a batch that rendered nothing writes no file.
func TestRenderBatchPricesTheBrowsersTime(t *testing.T) {
	u := RenderBatch(1, 5, 5, 10*time.Second, 2048, true)
	want := Units{LambdaRequests: 1, LambdaGBSeconds: 20, SQSRequests: 4, S3ClassB: 5, S3ClassA: 2, DynamoDBReadUnits: 0.5}
	if u != want {
		t.Errorf("units %+v, want %+v", u, want)
	}
	p := DefaultPrices()
	c := p.Cost(u)
	// The oracle: the list prices by hand, per item.
	hand := 20*p.LambdaGBSecond.USD + 1*p.LambdaRequestsPerMillion.USD/1e6 + 4*p.SQSPerMillion.USD/1e6 +
		5*p.S3ClassBPerThousand.USD/1e3 + 2*p.S3ClassAPerThousand.USD/1e3 + 0.5*p.DynamoDBReadPerMillion.USD/1e6
	if math.Abs(c.Total-hand) > 1e-12 {
		t.Errorf("cost %v, want %v", c.Total, hand)
	}
	if c.Lambda < 0.9*c.Total {
		t.Errorf("compute is %v of %v: the browser's time should dominate", c.Lambda, c.Total)
	}
	if u := RenderBatch(1, 3, 0, time.Second, 2048, true); u.S3ClassA != 0 {
		t.Errorf("a batch that rendered nothing puts %d objects", u.S3ClassA)
	}
}
