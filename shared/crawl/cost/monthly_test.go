package cost

import (
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"
)

func TestBatchRequests(t *testing.T) {
	tests := []struct {
		records, deleted int
		full             bool
		want             int64
	}{
		{0, 0, false, 0}, {1, 1, false, 3}, {10, 10, true, 2}, {10, 10, false, 3}, {11, 11, false, 5},
		{100, 100, true, 20}, {100, 0, true, 10}, {23, 11, false, 6},
	}
	for _, tt := range tests {
		if got := BatchRequests(tt.records, tt.deleted, tt.full); got != tt.want {
			t.Errorf("BatchRequests(%d, %d, %v) = %d, want %d", tt.records, tt.deleted, tt.full, got, tt.want)
		}
	}
}

func TestIdleReceives(t *testing.T) {
	// 5 pollers a queue, a receive each every 20 s: 15 a minute a queue.
	if got := IdleReceives(1, PollersPerQueue, time.Minute); got != 15 {
		t.Errorf("one queue, a minute: %d receives, want 15", got)
	}
	if got := IdleReceives(3, PollersPerQueue, HoursPerMonth*time.Hour); got != 3*15*43_800 {
		t.Errorf("three queues, a month: %d receives, want %d", got, 3*15*43_800)
	}
	if got := IdleReceives(3, 5, 0); got != 0 {
		t.Errorf("no time: %d receives", got)
	}
}

// TestIdleStackBill: the default stack, idle and empty, by hand: 3 queues x 15 receives a minute
// x 43,800 minutes x $0.40 a million = $0.7884, and 4 alarm metrics x $0.10 = $0.40.
func TestIdleStackBill(t *testing.T) {
	lines := DefaultPrices().Monthly(Stack{PolledQueues: 3, AlarmMetrics: 4})
	want := map[string]float64{"SQS receives of idle pollers": 0.7884, "alarm metrics": 0.40}
	for _, l := range lines {
		if !near(l.USD, want[l.Item]) {
			t.Errorf("%s: $%.6f, want $%.6f", l.Item, l.USD, want[l.Item])
		}
	}
	if got := Total(lines); !near(got, 1.1884) || got >= 1.50 {
		t.Errorf("total $%.4f, want $1.1884, under $1.50", got)
	}
	// Storage by the GB-month: 2 GB of table with PITR, 10 GB Standard, 100 GB IA, 1 GB of logs.
	stored := DefaultPrices().Monthly(Stack{Stored: Stored{Table: 2 << 30, PITR: true, S3Standard: 10 << 30, S3StandardIA: 100 << 30, Logs: 1 << 30}})
	wantStored := map[string]float64{"DynamoDB storage": 0.50, "DynamoDB point-in-time recovery": 0.40,
		"S3 Standard storage": 0.23, "S3 Standard-IA storage": 1.25, "CloudWatch Logs storage": 0.03}
	for _, l := range stored {
		if !near(l.USD, wantStored[l.Item]) {
			t.Errorf("%s: $%.6f, want $%.6f", l.Item, l.USD, wantStored[l.Item])
		}
	}
}

func TestMetricSeriesHoursAtTheCrawlsRate(t *testing.T) {
	// 8 series over a sample of 1,588 pages in 6 minutes: 0.8 series-hours, where whole clock
	// hours would bill 8. At that rate a million pages take 1e6 / 15,880 = 63.0 hours, 504
	// series-hours: $0.207 per million pages at $0.30 a series-month.
	u := Units{MetricSeriesHours: MetricSeriesHours(8, 6*time.Minute)}
	if !near(u.MetricSeriesHours, 0.8) {
		t.Errorf("series-hours %v, want 0.8", u.MetricSeriesHours)
	}
	perMillion := DefaultPrices().Cost(u).Metrics / 1588 * 1e6
	hours := 1e6 / (1588 / 0.1) // a million pages at 15,880 pages an hour
	if want := 8 * hours * 0.30 / 730; math.Abs(perMillion-want) > 1e-9 {
		t.Errorf("$%v per million pages, want $%v (8 series x %.1f hours x $0.30/730)", perMillion, want, hours)
	}
	if c := DefaultPrices().Cost(u); !near(c.Total, c.Metrics) || c.Metrics <= 0 {
		t.Errorf("costs %+v: want the metrics in the total", c)
	}
	for _, tt := range []struct {
		series  int
		elapsed time.Duration
	}{{0, time.Hour}, {8, 0}, {8, -time.Second}} {
		if got := MetricSeriesHours(tt.series, tt.elapsed); got != 0 {
			t.Errorf("MetricSeriesHours(%d, %v) = %v, want 0", tt.series, tt.elapsed, got)
		}
	}
}

// TestIdlePricesMatchTheStacks: the stack's idle-bill test (infra, a module of its own) reads its
// prices from infra/crawlstack/testdata/idle-prices.json; they are the ones here.
func TestIdlePricesMatchTheStacks(t *testing.T) {
	b, err := os.ReadFile("../../../infra/crawlstack/testdata/idle-prices.json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		AlarmMetricMonth, CustomMetricMonth, DashboardMonth, KMSKeyMonth, SQSPerMillion float64
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	p := DefaultPrices()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"alarmMetricMonth", got.AlarmMetricMonth, p.AlarmMetricMonth.USD},
		{"customMetricMonth", got.CustomMetricMonth, p.CustomMetricMonth.USD},
		{"dashboardMonth", got.DashboardMonth, p.DashboardMonth.USD},
		{"kmsKeyMonth", got.KMSKeyMonth, p.KMSKeyMonth.USD},
		{"sqsPerMillion", got.SQSPerMillion, p.SQSPerMillion.USD},
	} {
		if c.got != c.want {
			t.Errorf("idle-prices.json %s = %v, DefaultPrices has %v: change them together", c.name, c.got, c.want)
		}
	}
}

func TestPollerReceives(t *testing.T) {
	tests := []struct {
		name    string
		pollers int
		wait    time.Duration
		gap     time.Duration
		want    float64
	}{
		{"AWS's 5 pollers, a minute", PollersPerQueue, PollWait, time.Minute, 15},
		{"as IdleReceives counts a minute of one queue", PollersPerQueue, PollWait, time.Minute, float64(IdleReceives(1, PollersPerQueue, time.Minute))},
		{"2 pollers, 10 s", 2, PollWait, 10 * time.Second, 1},
		{"a second's waits (crawl run)", 3, time.Second, 4 * time.Second, 12},
		{"a gap past the bound", PollersPerQueue, PollWait, 24 * time.Hour, 5 * float64(MaxPollGap/PollWait)},
		{"no gap", PollersPerQueue, PollWait, 0, 0},
		{"no pollers", 0, PollWait, time.Minute, 0},
	}
	for _, tt := range tests {
		if got := PollerReceives(tt.pollers, tt.wait, tt.gap); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: PollerReceives(%d, %v, %v) = %v, want %v", tt.name, tt.pollers, tt.wait, tt.gap, got, tt.want)
		}
	}
}
