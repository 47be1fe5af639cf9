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
	metrics.Admitted(ctx, 3)
	metrics.Requeued(ctx, "slot")
	if err := tel.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	metrics.Admitted(ctx, 2) // the same series again: one series still
	if err := tel.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if b := m.Snapshot().LogBytes; b == 0 {
		t.Error("no log bytes metered for the EMF lines")
	}
	hours, most := series.seriesHours(start.Add(30 * time.Minute))
	if most != 2 {
		t.Errorf("%d series written, want 2 (admissions and requeues, of the stack's %d)", most, len(metrics.Series))
	}
	if math.Abs(hours-1) > 1e-9 {
		t.Errorf("%.3f series-hours for 2 series over half an hour, want 1", hours)
	}
}
