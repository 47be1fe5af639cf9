package costrun

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/observe/meter"
	"github.com/crawlstack/crawlstack/shared/observe/metrics"
	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// TestOnlyTheSeriesWrittenAreBilled: the functions' EMF lines, as observe/telemetry's exporter
// writes them after an invocation, are log bytes, and the series they name are billed for the
// hours they are written in; a series with nothing to say (no stall, no refusal) writes no value
// and is not billed.
func TestOnlyTheSeriesWrittenAreBilled(t *testing.T) {
	m := meter.New()
	start := time.Now()
	series := newEMFSeries(m, start)
	tel, err := telemetry.Setup(context.Background(), func(string) string { return "" }, telemetry.Options{Service: "test", EMF: series})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	ctx := context.Background()
	metrics.CountStates(ctx, map[string]int64{"fetched": 3}) // in the ledger's line, no series
	metrics.CountStates(ctx, map[string]int64{"class_budget": 2})
	metrics.Fetched(ctx, "page", "", 1000, time.Second)
	metrics.Admitted(ctx, 3) // in the ledger's line, no series
	metrics.Requeued(ctx, "slot")
	if err := tel.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	metrics.Fetched(ctx, "page", "", 1000, time.Second) // the same series again: one series still
	if err := tel.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if b := m.Snapshot().LogBytes; b == 0 {
		t.Error("no log bytes metered for the EMF lines")
	}
	hours, most := series.seriesHours(start.Add(30 * time.Minute))
	if most != 2 {
		t.Errorf("%d series written, want 2 (budget refusals and fetch durations, of the stack's %d)", most, len(metrics.Series))
	}
	if math.Abs(hours-1) > 1e-9 {
		t.Errorf("%.3f series-hours for 2 series over half an hour, want 1", hours)
	}
}
