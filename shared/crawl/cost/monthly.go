package cost

import "time"

// Stack is what a deployed stack holds that is billed by the month, crawl or no crawl.
type Stack struct {
	// PolledQueues are the queues an SQS event source mapping polls (the DLQs have none), each
	// with PollersPerQueue pollers long-polling all the time.
	PolledQueues int
	// AlarmMetrics are the metrics the alarms read, each billed (a metric-math alarm reads several).
	AlarmMetrics int
	// MetricSeries are the custom metric series that receive data every hour (none while idle:
	// the functions write their metrics only as they run).
	MetricSeries int
	// Dashboards and KMSKeys are counted whole.
	Dashboards, KMSKeys int
	// Stored is what the table, the bucket and the log groups hold.
	Stored Stored
}

// Stored is the stack's data at rest, in bytes.
type Stored struct {
	// Table is the DynamoDB table's size; PITR says whether its continuous backups are on.
	Table int64
	PITR  bool
	// S3Standard and S3StandardIA are the bucket's bytes in each storage class.
	S3Standard, S3StandardIA int64
	// Logs are the log groups' stored bytes.
	Logs int64
}

// Line is one item of a monthly bill.
type Line struct {
	Item string
	USD  float64
}

// Monthly is what s costs a month at p, item by item, with no crawl running: the pollers'
// empty receives, the alarm metrics, the metric series, dashboards and keys, and the storage by
// the GB-month. Free tiers are left out (an account's first million SQS requests, 10 alarm
// metrics, 10 custom metrics, 3 dashboards, 25 GB of DynamoDB storage and 5 GB of S3 are free,
// shared by everything else it runs). Its lines come in a fixed order, zeros included.
func (p Prices) Monthly(s Stack) []Line {
	month := time.Duration(HoursPerMonth) * time.Hour
	gb := func(n int64) float64 { return float64(n) / bytesPerGB }
	pitr := 0.0
	if s.Stored.PITR {
		pitr = gb(s.Stored.Table) * p.DynamoDBPITRGBMonth.USD
	}
	return []Line{
		{"SQS receives of idle pollers", float64(IdleReceives(s.PolledQueues, PollersPerQueue, month)) / 1e6 * p.SQSPerMillion.USD},
		{"alarm metrics", float64(s.AlarmMetrics) * p.AlarmMetricMonth.USD},
		{"custom metric series", float64(s.MetricSeries) * p.CustomMetricMonth.USD},
		{"dashboards", float64(s.Dashboards) * p.DashboardMonth.USD},
		{"KMS keys", float64(s.KMSKeys) * p.KMSKeyMonth.USD},
		{"DynamoDB storage", gb(s.Stored.Table) * p.DynamoDBStorageGBMonth.USD},
		{"DynamoDB point-in-time recovery", pitr},
		{"S3 Standard storage", gb(s.Stored.S3Standard) * p.S3StandardGBMonth.USD},
		{"S3 Standard-IA storage", gb(s.Stored.S3StandardIA) * p.S3StandardIAGBMonth.USD},
		{"CloudWatch Logs storage", gb(s.Stored.Logs) * p.LogsStorageGBMonth.USD},
	}
}

// Total adds up a bill's lines.
func Total(lines []Line) float64 {
	var t float64
	for _, l := range lines {
		t += l.USD
	}
	return t
}
