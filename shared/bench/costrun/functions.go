package costrun

import "time"

// Function is what the stack gives one function (infra/crawlstack.FunctionConfig, field for
// field): its timeout and memory, how many batches it works on at once (the event source mapping's
// maximum concurrency), its batch size and batching window, and how many records of a batch it
// works on at once.
type Function struct {
	TimeoutSeconds, MemoryMB, MaxConcurrency, BatchSize, BatchWindowSeconds, BatchConcurrency int
}

// StackFunctions are the stack's default function settings (infra/crawlstack.DefaultFunctions,
// which sits in a module of its own). Both modules' tests hold their defaults against one copy,
// infra/crawlstack/testdata/function-defaults.json: change the three together.
func StackFunctions() map[string]Function {
	return map[string]Function{
		"schedule": {TimeoutSeconds: 60, MemoryMB: 256, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 10},
		"fetch":    {TimeoutSeconds: 120, MemoryMB: 512, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 100},
		"parse":    {TimeoutSeconds: 60, MemoryMB: 512, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 10},
		// The slow lane: the runs of polite hosts, which wait in place for their slots.
		"fetchslow": {TimeoutSeconds: 120, MemoryMB: 128, MaxConcurrency: 2, BatchSize: 100, BatchWindowSeconds: 2, BatchConcurrency: 100},
	}
}

// StackRunURLs is the stack's runUrls (infra/crawlstack.DefaultRunURLs, held against
// infra/crawlstack/testdata/stack-defaults.json): runs of 10 URLs of a polite host through the
// slow lane by default; -run-urls 0 measures the stack without runs and without the lane.
const StackRunURLs = 10

// StackRenderFunction is the stack's render function (infra/crawlstack.DefaultRenderFunction, on
// with render=true): a browser's memory, batches of 5 with 2 rendered at once.
func StackRenderFunction() Function {
	return Function{TimeoutSeconds: 120, MemoryMB: 2048, MaxConcurrency: 2, BatchSize: 5, BatchWindowSeconds: 2, BatchConcurrency: 2}
}

// lambdaPoll is how long an event source mapping's poller waits in a receive (SQS long polling at
// its longest, 20 s): the empty receives of a queue with little in it are metered as Lambda makes them.
const lambdaPoll = 20 * time.Second

// lambdaReportBytes is what Lambda itself logs for each invocation: nothing at the stack's
// system log level, WARN (infra's systemLogLevel), where it writes no START or REPORT line;
// ledger.LambdaReportBytes at Lambda's default, INFO.
const lambdaReportBytes = 0
