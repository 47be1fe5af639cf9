package cost

import (
	"math"
	"testing"
)

func TestCountersRoundTrip(t *testing.T) {
	u := Units{SQSRequests: 7, DynamoDBReadUnits: 1.5, DynamoDBWriteUnits: 12.25, S3ClassA: 2, S3ClassB: 3,
		LambdaRequests: 4, LambdaGBSeconds: 0.1234565, LogBytes: 999, MetricSeriesHours: 0.25}
	c := u.Counters()
	back := UnitsFromCounters(func(name string) int64 { return c[name] })
	if back.SQSRequests != 7 || back.DynamoDBReadUnits != 1.5 || back.DynamoDBWriteUnits != 12.25 || back.S3ClassA != 2 ||
		back.S3ClassB != 3 || back.LambdaRequests != 4 || back.LogBytes != 999 || back.MetricSeriesHours != 0.25 {
		t.Errorf("round trip of %+v gave %+v", u, back)
	}
	if back.LambdaGBSeconds < u.LambdaGBSeconds || back.LambdaGBSeconds-u.LambdaGBSeconds > 1e-6 {
		t.Errorf("GB-seconds %v came back as %v: want rounded up to the millionth", u.LambdaGBSeconds, back.LambdaGBSeconds)
	}
	if len(Units{}.Counters()) != 0 {
		t.Errorf("no units gave counters %v, want none", Units{}.Counters())
	}
	for _, name := range CounterNames {
		if _, ok := c[name]; !ok {
			t.Errorf("counter %s missing from %v", name, c)
		}
	}
}

func TestShareAddsUp(t *testing.T) {
	u := Units{SQSRequests: 10, DynamoDBWriteUnits: 3, S3ClassA: 1, LambdaRequests: 1, LambdaGBSeconds: 0.9, LogBytes: 100, MetricSeriesHours: 0.3}
	parts := u.Share([]int{1, 2})
	var sum Units
	for _, p := range parts {
		sum = sum.Add(p)
	}
	if sum.SQSRequests != 10 || sum.S3ClassA != 1 || sum.LambdaRequests != 1 || sum.LogBytes != 100 ||
		math.Abs(sum.DynamoDBWriteUnits-3) > 1e-9 || math.Abs(sum.LambdaGBSeconds-0.9) > 1e-9 || math.Abs(sum.MetricSeriesHours-0.3) > 1e-9 {
		t.Errorf("parts %+v add up to %+v, want %+v", parts, sum, u)
	}
	if parts[0].SQSRequests != 3 || parts[1].SQSRequests != 7 || math.Abs(parts[1].DynamoDBWriteUnits-2) > 1e-9 {
		t.Errorf("parts %+v: want a third and two thirds", parts)
	}
	if got := u.Share(nil); len(got) != 0 {
		t.Errorf("no weights gave %v", got)
	}
}

func TestUnitsAddSub(t *testing.T) {
	a := Units{SQSRequests: 3, DynamoDBReadUnits: 1.5, DynamoDBWriteUnits: 2, DynamoDBUnmetered: 1,
		S3ClassA: 4, S3ClassB: 5, LambdaRequests: 6, LambdaGBSeconds: 0.5, LogBytes: 7, MetricSeriesHours: 0.5}
	b := Units{SQSRequests: 1, DynamoDBReadUnits: 0.5, DynamoDBWriteUnits: 1, S3ClassA: 1, S3ClassB: 2,
		LambdaRequests: 3, LambdaGBSeconds: 0.25, LogBytes: 2, MetricSeriesHours: 0.25}
	sum := Units{SQSRequests: 4, DynamoDBReadUnits: 2, DynamoDBWriteUnits: 3, DynamoDBUnmetered: 1,
		S3ClassA: 5, S3ClassB: 7, LambdaRequests: 9, LambdaGBSeconds: 0.75, LogBytes: 9, MetricSeriesHours: 0.75}
	if got := a.Add(b); got != sum {
		t.Errorf("Add = %+v, want %+v", got, sum)
	}
	if got := sum.Sub(b); got != a {
		t.Errorf("Sub = %+v, want %+v", got, a)
	}
}

// near tells whether two float sums agree to within rounding.
func near(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}
