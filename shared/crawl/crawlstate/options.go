package crawlstate

import "time"

// Option sets how a Store behaves, at New: a store is complete when built, and shared by handlers
// that run at once, so none of its settings is changed once it is in use.
type Option func(*settings)

// settings are a store's options, which New hands to the parts that use them.
type settings struct {
	// now is the clock (WithClock).
	now func() time.Time
	// costCheck is how often BudgetOpen reads a crawl's ledger (0: DefaultCostCheck).
	costCheck time.Duration
	// metricSeries: see WithMetricSeries.
	metricSeries int
	// runCheck is how long RunOf keeps a crawl's run state (0: DefaultRunCheck; below 0: not at all).
	runCheck time.Duration
	// circuitFailures is how many failed first requests in a row open a host's circuit
	// (0: DefaultCircuitFailures; below 0: never); circuitProbe is how long an open circuit waits
	// before each probe (0: DefaultCircuitProbe). See circuit.go and WithCircuit.
	circuitFailures int
	circuitProbe    time.Duration
	// bufferCounters and holdCounters: see counts.
	bufferCounters, holdCounters bool
	// tallyItems: see WithTallyStepItems.
	tallyItems int64
}

// WithClock makes the store read the time from now instead of time.Now (tests).
func WithClock(now func() time.Time) Option {
	return func(s *settings) { s.now = now }
}

// WithRunCheck sets how long RunOf keeps a crawl's run state once read (0: DefaultRunCheck; below
// 0: not at all).
func WithRunCheck(d time.Duration) Option {
	return func(s *settings) { s.runCheck = d }
}

// WithCostCheck sets how often BudgetOpen reads a crawl's ledger (0: DefaultCostCheck).
func WithCostCheck(d time.Duration) Option {
	return func(s *settings) { s.costCheck = d }
}

// WithMetricSeries says how many custom metric series the stack's functions write while a crawl
// runs (0: none, metrics off). CloudWatch bills them by the hour, and no invocation sees that, so
// the budget counts them itself: a crawl's ledger plus series x the time since it started
// (cost.MetricSeriesHours), the same totals as `make cost`'s. The series have no dimension, so
// the crawls that run at once share them; each crawl's budget counts them all, as if it ran alone.
func WithMetricSeries(n int) Option {
	return func(s *settings) { s.metricSeries = max(n, 0) }
}

// WithCircuit sets how many failed first requests in a row open a host's circuit (0:
// DefaultCircuitFailures; below 0: never) and how long an open circuit waits before each probe
// (0: DefaultCircuitProbe).
func WithCircuit(failures int, probe time.Duration) Option {
	return func(s *settings) { s.circuitFailures, s.circuitProbe = failures, probe }
}

// WithBufferedCounters keeps counter increments in memory until Flush, one write per crawl and
// invocation instead of one per transition; the handlers flush at the end of every invocation.
func WithBufferedCounters() Option {
	return func(s *settings) { s.bufferCounters = true }
}

// WithHeldCounters buffers counter increments and makes Flush keep them for WriteCounters, which
// the process that owns the store calls on its own schedule (crawl run, every 100 ms). Only for a
// process that runs for the whole crawl: a frozen Lambda container would keep them.
func WithHeldCounters() Option {
	return func(s *settings) { s.bufferCounters, s.holdCounters = true, true }
}

// WithTallyStepItems makes each step of a resumable tally (DrainedStep) read at most n items
// besides its time budget (0: no bound but the budget): the tests split a tally at every item, and
// the bench runs a tally in the steps its checks would take.
func WithTallyStepItems(n int) Option {
	return func(s *settings) { s.tallyItems = int64(n) }
}
