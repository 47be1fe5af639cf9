package crawlstack

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// maxIdleBill is what a deployed stack may cost a month with no crawl, at its defaults (issue 43).
const maxIdleBill = 1.50

// idlePrices are the list prices of the idle bill's items (testdata/idle-prices.json, held
// against shared/crawl/cost's DefaultPrices by that package's tests).
type idlePrices struct {
	AlarmMetricMonth, CustomMetricMonth, DashboardMonth, KMSKeyMonth, SQSPerMillion float64
}

func readIdlePrices(t *testing.T) idlePrices {
	t.Helper()
	b, err := os.ReadFile("testdata/idle-prices.json")
	if err != nil {
		t.Fatal(err)
	}
	var p idlePrices
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.AlarmMetricMonth <= 0 || p.SQSPerMillion <= 0 || p.KMSKeyMonth <= 0 || p.DashboardMonth <= 0 {
		t.Fatalf("testdata/idle-prices.json: %+v, want every price", p)
	}
	return p
}

// The event source mappings' pollers, as AWS runs them with maximum concurrency set (the stack
// sets it on each): 5 pollers a queue, each long-polling 20 s, so an idle queue takes 15 receives
// a minute (shared/crawl/cost's PollersPerQueue and PollWait).
const (
	pollersPerQueue = 5
	receivesAMinute = 60 / 20
	minutesAMonth   = 730 * 60 // AWS bills a month as 730 hours
)

// idleBill is what a template's resources cost a month with no crawl, item by item: the alarm
// metrics (an alarm is billed for each metric it reads, a metric-math one for each metric of its
// expression), the empty receives of each SQS event source mapping's pollers, the KMS keys and
// the dashboards. Storage is zero with nothing stored; the functions, queues, table, bucket, log
// groups, rules and topics cost nothing while idle; no custom metric is written with no crawl.
func idleBill(t *testing.T, template map[string]any, p idlePrices) map[string]float64 {
	t.Helper()
	bill := map[string]float64{}
	for id, r := range resourcesOf(template) {
		props, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::CloudWatch::Alarm":
			bill["alarm metrics"] += float64(alarmMetrics(props)) * p.AlarmMetricMonth
		case "AWS::Lambda::EventSourceMapping":
			src, _ := json.Marshal(props["EventSourceArn"])
			if !strings.Contains(string(src), "Queue") {
				t.Fatalf("event source mapping %s reads %s: the idle bill knows only SQS queues", id, src)
			}
			bill["SQS receives of idle pollers"] += pollersPerQueue * receivesAMinute * minutesAMonth * p.SQSPerMillion / 1e6
		case "AWS::KMS::Key":
			bill["KMS keys"] += p.KMSKeyMonth
		case "AWS::CloudWatch::Dashboard":
			bill["dashboards"] += p.DashboardMonth
		case "AWS::SecretsManager::Secret", "AWS::EC2::NatGateway", "AWS::RDS::DBInstance", "AWS::EC2::Instance":
			t.Fatalf("%s (%s) costs money by the hour: add it to the idle bill", id, r["Type"])
		}
	}
	return bill
}

// alarmMetrics is how many metrics an alarm reads.
func alarmMetrics(props map[string]any) int {
	ms, ok := props["Metrics"].([]any)
	if !ok {
		return 1
	}
	n := 0
	for _, m := range ms {
		if _, stat := m.(map[string]any)["MetricStat"]; stat {
			n++
		}
	}
	return n
}

func total(bill map[string]float64) float64 {
	var sum float64
	for _, v := range bill {
		sum += v
	}
	return sum
}

func describeBill(bill map[string]float64) string {
	var items []string
	for k, v := range bill {
		items = append(items, fmt.Sprintf("%s $%.2f", k, v))
	}
	sort.Strings(items)
	return strings.Join(items, ", ")
}

// TestIdleBillUnderOneFiftyAMonth: the default stack, deployed and idle, costs less than $1.50 a
// month: 4 alarm metrics (the three dead-letter queues and stalled crawls) and the pollers of the
// four queues that feed the functions (the dead-letter queues have none): schedule's, fetch's,
// parse's and the slow lane's, which the default runs of 10 make and which adds no alarm (its
// dead-letter queue is fetch's). Without runs (runUrls 0) the lane and its pollers are gone.
// docs/cost.md states the same bill.
func TestIdleBillUnderOneFiftyAMonth(t *testing.T) {
	p := readIdlePrices(t)
	for _, tt := range []struct {
		name   string
		ctx    map[string]any
		queues int
	}{
		{"the defaults: runs of 10 and the slow lane", nil, 4},
		{"runUrls 0: no runs, no slow lane", map[string]any{"runUrls": "0"}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, tmpl := synthWith(t, tt.ctx)
			bill := idleBill(t, tmpl, p)
			t.Logf("idle bill: %s; total $%.2f a month", describeBill(bill), total(bill))
			if got := total(bill); got >= maxIdleBill {
				t.Errorf("a deployed, idle stack costs $%.2f a month (%s), want under $%.2f", got, describeBill(bill), maxIdleBill)
			}
			// The arithmetic, by hand: 4 x $0.10, and each queue's 5 pollers x 3 receives a minute x
			// 43,800 minutes x $0.40 a million = $0.2628.
			want := map[string]float64{"alarm metrics": 0.40, "SQS receives of idle pollers": float64(tt.queues) * 0.2628}
			for k, v := range want {
				if d := bill[k] - v; d > 1e-9 || d < -1e-9 {
					t.Errorf("%s: $%.4f, want $%.4f", k, bill[k], v)
				}
			}
			if len(bill) != len(want) {
				t.Errorf("idle bill %s, want only %v", describeBill(bill), want)
			}
		})
	}
}

// TestIdleBillCountsWhatTheSettingsAdd: the extra alarms, a budget's alarm, the alarm email's key
// and the dashboard each add what the docs say (docs/cost.md, docs/deploy.md).
func TestIdleBillCountsWhatTheSettingsAdd(t *testing.T) {
	p := readIdlePrices(t)
	_, all := synthWith(t, map[string]any{"extraAlarms": "true", "budgetUsd": "5", "alarmEmail": "ops@example.com", "dashboard": "true"})
	bill := idleBill(t, all, p)
	t.Logf("idle bill with every option: %s; total $%.2f a month", describeBill(bill), total(bill))
	// 3 DLQs, 3 queue ages, stalls, budget, 3+3 function errors and throttles, 2 table throttles.
	if got, want := bill["alarm metrics"], 16*p.AlarmMetricMonth; got-want > 1e-9 || want-got > 1e-9 {
		t.Errorf("alarm metrics $%.2f, want $%.2f (16 metrics)", got, want)
	}
	if bill["KMS keys"] != p.KMSKeyMonth || bill["dashboards"] != p.DashboardMonth {
		t.Errorf("idle bill %s: want one KMS key and one dashboard", describeBill(bill))
	}
}
