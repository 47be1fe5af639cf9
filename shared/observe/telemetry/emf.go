package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// EMF exports metrics as CloudWatch Embedded Metric Format: one JSON line per set of attributes,
// written to W (a Lambda function's stdout, which CloudWatch Logs reads and turns into metrics, with
// no agent and no API call). Temporality is delta: each line holds what happened since the last
// export, as CloudWatch sums it. The attributes are the dimensions, and no others are added: the
// crawl's metrics have none (package metrics), so that a stack pays for few metric series. An
// attribute whose value is empty is left out.
//
// A histogram becomes an array of values, each bucket's midpoint (its bound for the outer ones)
// repeated by its count, at most MaxEMFValues in all, as the format allows arrays of values and
// not buckets: CloudWatch's percentiles are then as fine as the buckets.
type EMF struct {
	W         io.Writer
	Namespace string

	mu sync.Mutex
}

// now is the clock of the lines' timestamps.
var now = time.Now

// MaxEMFValues is the most values the format takes for one metric in one line.
const MaxEMFValues = 100

var _ sdkmetric.Exporter = (*EMF)(nil)

// Temporality is delta for every instrument.
func (*EMF) Temporality(sdkmetric.InstrumentKind) metricdata.Temporality {
	return metricdata.DeltaTemporality
}

// Aggregation is the SDK's default.
func (*EMF) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// emfLine is one EMF document: its metrics share one set of dimensions.
type emfLine struct {
	dims    []string // dimension names, sorted
	fields  map[string]any
	metrics []emfMetric
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit,omitempty"`
}

// Export writes one line per attribute set. Points with no change (a zero sum, an empty
// histogram) are left out, so an idle invocation writes nothing.
func (e *EMF) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	lines := map[attribute.Distinct]*emfLine{}
	var order []attribute.Distinct
	line := func(set attribute.Set) *emfLine {
		k := set.Equivalent()
		if l, ok := lines[k]; ok {
			return l
		}
		l := &emfLine{dims: []string{}, fields: map[string]any{}} // [] and not null: no dimension
		for _, kv := range set.ToSlice() {
			if v := kv.Value.Emit(); v != "" { // CloudWatch takes no empty dimension value
				l.dims = append(l.dims, string(kv.Key))
				l.fields[string(kv.Key)] = v
			}
		}
		sort.Strings(l.dims)
		lines[k] = l
		order = append(order, k)
		return l
	}
	add := func(set attribute.Set, name, unit string, v any) {
		l := line(set)
		l.fields[name] = v
		l.metrics = append(l.metrics, emfMetric{Name: name, Unit: cloudWatchUnit(unit)})
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if p.Value != 0 {
						add(p.Attributes, m.Name, m.Unit, p.Value)
					}
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					if p.Value != 0 {
						add(p.Attributes, m.Name, m.Unit, p.Value)
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if p.Count > 0 {
						add(p.Attributes, m.Name, m.Unit, histogramValues(p))
					}
				}
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := now().UnixMilli()
	for _, k := range order {
		l := lines[k]
		l.fields["_aws"] = map[string]any{
			"Timestamp": ts,
			"CloudWatchMetrics": []map[string]any{{
				"Namespace":  e.Namespace,
				"Dimensions": [][]string{l.dims},
				"Metrics":    l.metrics,
			}},
		}
		b, err := json.Marshal(l.fields)
		if err != nil {
			return fmt.Errorf("emf: encode: %w", err)
		}
		if _, err := e.W.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("emf: write: %w", err)
		}
	}
	return nil
}

// histogramValues spreads a histogram's counts over representative values, scaled down to at
// most MaxEMFValues values.
func histogramValues(p metricdata.HistogramDataPoint[float64]) []float64 {
	scale := 1.0
	if p.Count > MaxEMFValues {
		scale = float64(MaxEMFValues) / float64(p.Count)
	}
	var out []float64
	for i, n := range p.BucketCounts {
		if n == 0 {
			continue
		}
		var v float64
		switch {
		case len(p.Bounds) == 0:
			v = p.Sum / float64(p.Count)
		case i == 0:
			v = p.Bounds[0]
			if m, ok := p.Min.Value(); ok {
				v = (m + v) / 2
			}
		case i == len(p.Bounds):
			v = p.Bounds[i-1]
			if m, ok := p.Max.Value(); ok {
				v = m
			}
		default:
			v = (p.Bounds[i-1] + p.Bounds[i]) / 2
		}
		k := max(int(float64(n)*scale+0.5), 1)
		for range k {
			if len(out) == MaxEMFValues {
				return out
			}
			out = append(out, v)
		}
	}
	return out
}

// cloudWatchUnit maps a UCUM unit to CloudWatch's names; counts ({page}) become Count.
func cloudWatchUnit(u string) string {
	switch u {
	case "s":
		return "Seconds"
	case "ms":
		return "Milliseconds"
	case "By":
		return "Bytes"
	case "1", "":
		return "None"
	}
	return "Count"
}

// ForceFlush has nothing buffered.
func (*EMF) ForceFlush(context.Context) error { return nil }

// Shutdown has nothing to release.
func (*EMF) Shutdown(context.Context) error { return nil }
