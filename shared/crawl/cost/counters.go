package cost

import "math"

// The names of a crawl's cost counters in the table (see Units.Counters). Fractional units are
// kept in whole thousandths (read and write units) or millionths (GB-seconds), so that they add up
// with the table's atomic counters.
const (
	CounterSQS         = "cost_sqs"
	CounterDynamoRead  = "cost_ddb_rru_milli"
	CounterDynamoWrite = "cost_ddb_wru_milli"
	CounterS3ClassA    = "cost_s3_a"
	CounterS3ClassB    = "cost_s3_b"
	CounterLambda      = "cost_lambda"
	CounterLambdaGBs   = "cost_lambda_gbs_micro"
	CounterLogBytes    = "cost_log_bytes"
	CounterMetricHours = "cost_metric_hours_micro"
	dynamoScale        = 1000
	gbSecondsScale     = 1_000_000
	metricHoursScale   = 1_000_000
	counterCount       = 9
)

// CounterNames lists the names Counters uses.
var CounterNames = []string{CounterSQS, CounterDynamoRead, CounterDynamoWrite, CounterS3ClassA,
	CounterS3ClassB, CounterLambda, CounterLambdaGBs, CounterLogBytes, CounterMetricHours}

// Counters returns u as whole-number counters to add to a crawl's ledger, leaving out those that
// are zero. Fractions are rounded up: a ledger errs on the side of a higher cost.
func (u Units) Counters() map[string]int64 {
	all := map[string]int64{
		CounterSQS: u.SQSRequests, CounterS3ClassA: u.S3ClassA, CounterS3ClassB: u.S3ClassB,
		CounterLambda: u.LambdaRequests, CounterLogBytes: u.LogBytes,
		CounterDynamoRead:  int64(math.Ceil(u.DynamoDBReadUnits * dynamoScale)),
		CounterDynamoWrite: int64(math.Ceil(u.DynamoDBWriteUnits * dynamoScale)),
		CounterLambdaGBs:   int64(math.Ceil(u.LambdaGBSeconds * gbSecondsScale)),
		CounterMetricHours: int64(math.Ceil(u.MetricSeriesHours * metricHoursScale)),
	}
	out := make(map[string]int64, counterCount)
	for k, v := range all {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// UnitsFromCounters reads back the units that Counters wrote; get returns a counter's total.
func UnitsFromCounters(get func(name string) int64) Units {
	return Units{
		SQSRequests: get(CounterSQS), S3ClassA: get(CounterS3ClassA), S3ClassB: get(CounterS3ClassB),
		LambdaRequests: get(CounterLambda), LogBytes: get(CounterLogBytes),
		DynamoDBReadUnits:  float64(get(CounterDynamoRead)) / dynamoScale,
		DynamoDBWriteUnits: float64(get(CounterDynamoWrite)) / dynamoScale,
		LambdaGBSeconds:    float64(get(CounterLambdaGBs)) / gbSecondsScale,
		MetricSeriesHours:  float64(get(CounterMetricHours)) / metricHoursScale,
	}
}

// Share splits u into parts in proportion to weights (a batch's records per crawl, say). Whole
// units are dealt out so that the parts add up to u; fractional ones are split exactly.
func (u Units) Share(weights []int) []Units {
	total := 0
	for _, w := range weights {
		total += w
	}
	out := make([]Units, len(weights))
	if total == 0 {
		return out
	}
	whole := func(n int64, set func(*Units, int64)) {
		var given int64
		for i, w := range weights {
			part := n * int64(w) / int64(total)
			if i == len(weights)-1 {
				part = n - given
			}
			given += part
			set(&out[i], part)
		}
	}
	whole(u.SQSRequests, func(p *Units, v int64) { p.SQSRequests = v })
	whole(u.S3ClassA, func(p *Units, v int64) { p.S3ClassA = v })
	whole(u.S3ClassB, func(p *Units, v int64) { p.S3ClassB = v })
	whole(u.LambdaRequests, func(p *Units, v int64) { p.LambdaRequests = v })
	whole(u.LogBytes, func(p *Units, v int64) { p.LogBytes = v })
	whole(u.DynamoDBUnmetered, func(p *Units, v int64) { p.DynamoDBUnmetered = v })
	for i, w := range weights {
		f := float64(w) / float64(total)
		out[i].DynamoDBReadUnits = u.DynamoDBReadUnits * f
		out[i].DynamoDBWriteUnits = u.DynamoDBWriteUnits * f
		out[i].LambdaGBSeconds = u.LambdaGBSeconds * f
		out[i].MetricSeriesHours = u.MetricSeriesHours * f
	}
	return out
}
