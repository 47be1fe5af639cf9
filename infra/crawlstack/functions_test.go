package crawlstack

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// wantEnv is the environment contract with the handlers, as the test context
// sets it. Every function gets all of it, with its own batch concurrency.
func wantEnv(t *testing.T, batchConcurrency string) map[string]any {
	return map[string]any{
		"CRAWL_BATCH_CONCURRENCY":  batchConcurrency,
		"CRAWL_BUCKET":             ref(logicalID(t, "AWS::S3::Bucket", "Bucket")),
		"CRAWL_TABLE":              ref(logicalID(t, "AWS::DynamoDB::Table", "Table")),
		"SCHEDULE_QUEUE_URL":       ref(logicalID(t, "AWS::SQS::Queue", "ScheduleQueue")),
		"FETCH_QUEUE_URL":          ref(logicalID(t, "AWS::SQS::Queue", "FetchQueue")),
		"PARSE_QUEUE_URL":          ref(logicalID(t, "AWS::SQS::Queue", "ParseQueue")),
		"FETCHSLOW_QUEUE_URL":      ref(logicalID(t, "AWS::SQS::Queue", "FetchslowQueue")),
		"CRAWL_SCOPE":              "domain",
		"CRAWL_MAX_DEPTH":          "4",
		"CRAWL_MAX_PAGES":          "250",
		"CRAWL_MAX_PAGES_PER_HOST": "40",
		"CRAWL_INCLUDE":            `["^https://a\\.test/v[0-9]{1,2}/","^https://b\\.test/(x|y){1,3}/"]`,
		"CRAWL_EXCLUDE":            `["[?&]sort=","/page/[0-9]{3,}"]`, // JSON, as a regexp may hold commas; & not escaped
		"CRAWL_HOST_RPS":           "2.5",
		"CRAWL_USER_AGENT":         "testbot/1.0",
		"CRAWL_MAX_RECEIVE":        "6", // equal to the queues' maxReceiveCount
		"CRAWL_MAX_TRIES":          "3",
		"CRAWL_WARC_INDEX":         "file", // the test context's; the stack's default is crawl
		"CRAWL_METRICS_NAMESPACE":  "Crawlstack",
		"CRAWL_RETRY_WAIT":         "5s",
		"CRAWL_RUN_URLS":           "10",
		"CRAWL_RETRY_CLASSES":      "timeout=2,http_5xx=6/10s",
		"CRAWL_ALLOW_NET":          "10.0.0.0/8,127.0.0.1/32",
		"CRAWL_RECRAWL_PREFIX":     "recrawl/",
		"CRAWL_BUDGET_USD":         "12.5",
		"CRAWL_SLOT_LEAD":          "5s", // the fetch batching window of the test context
		"CRAWL_SYSTEM_LOG_LEVEL":   "WARN",
		// A crawl's drain checks: one a minute, and counters quiet for the schedule queue's
		// visibility timeout (6 x 60 s + its 2 s batching window) and a check more.
		"CRAWL_FINISH_EVERY": "60s",
		"CRAWL_FINISH_QUIET": "422s",
		"CRAWL_FINISH_STALL": "60m", // an hour of checks that find the counters still with work left
	}
}

func TestFunctions(t *testing.T) {
	tests := []struct {
		fn               string
		timeout          float64
		memory           float64
		batchConcurrency string
	}{
		{"Schedule", 60, 256, "10"},
		{"Fetch", 100, 1024, "100"},    // timeout and memory from the test context
		{"Parse", 60, 512, "20"},       // batch concurrency from the test context
		{"Fetchslow", 120, 128, "100"}, // the slow lane's defaults
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			id := logicalID(t, "AWS::Lambda::Function", tt.fn+"Function")
			matchProps(t, id, like(map[string]any{
				"Runtime":       "provided.al2023",
				"Architectures": []any{"arm64"},
				"Handler":       "bootstrap",
				"Timeout":       tt.timeout,
				"MemorySize":    tt.memory,
				"Environment":   map[string]any{"Variables": equals(wantEnv(t, tt.batchConcurrency))},
				"LoggingConfig": map[string]any{
					"LogFormat": "JSON",
					"LogGroup":  ref(logicalID(t, "AWS::Logs::LogGroup", tt.fn+"Logs")),
					// No START and REPORT lines: a line per invocation is most of a batch's logs.
					"ApplicationLogLevel": "INFO",
					"SystemLogLevel":      "WARN",
				},
				// parse -> schedule -> fetch -> parse is a loop by design.
				"RecursiveLoop": "Allow",
				// The event source mapping's MaxConcurrency caps instead.
				"ReservedConcurrentExecutions": assertions.Match_Absent(),
			}))
			matchProps(t, logicalID(t, "AWS::Logs::LogGroup", tt.fn+"Logs"), like(map[string]any{
				"RetentionInDays": float64(30),
			}))
		})
	}
}

func TestFunctionAssetsComeFromDist(t *testing.T) {
	seen := map[any]string{}
	for _, fn := range []string{"Schedule", "Fetch", "Fetchslow", "Parse"} {
		code := props(t, logicalID(t, "AWS::Lambda::Function", fn+"Function"))["Code"].(map[string]any)
		key, ok := code["S3Key"].(string)
		if !ok {
			t.Errorf("%s: code is not an S3 asset: %v", fn, code)
			continue
		}
		if other, dup := seen[key]; dup {
			t.Errorf("%s and %s share asset %s: want one asset per dist/<fn>", fn, other, key)
		}
		seen[key] = fn
	}
}

func TestEventSourceMappings(t *testing.T) {
	tests := []struct {
		fn          string
		batchSize   float64
		window      float64
		concurrency float64
	}{
		{"Schedule", 5, 2, 2}, // batch size from the test context
		{"Fetch", 100, 5, 2},  // window from the test context
		{"Parse", 100, 2, 7},  // concurrency from the test context
		{"Fetchslow", 100, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			fn := logicalID(t, "AWS::Lambda::Function", tt.fn+"Function")
			check(t, "mapping", func() {
				tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), equals(map[string]any{
					"FunctionName":                   ref(fn),
					"EventSourceArn":                 getAtt(logicalID(t, "AWS::SQS::Queue", tt.fn+"Queue"), "Arn"),
					"BatchSize":                      tt.batchSize,
					"MaximumBatchingWindowInSeconds": tt.window,
					"FunctionResponseTypes":          []any{"ReportBatchItemFailures"},
					"ScalingConfig":                  map[string]any{"MaximumConcurrency": tt.concurrency},
				}))
			})
			// Lambda takes a batch above 10 only with a window of 1 s or more.
			if tt.batchSize > 10 && tt.window < 1 {
				t.Errorf("batch size %v with a window of %v s", tt.batchSize, tt.window)
			}
			// Reserved concurrency below the mapping's cap would throttle
			// it and push good messages to the DLQ.
			if rc, ok := props(t, fn)["ReservedConcurrentExecutions"].(float64); ok && rc < tt.concurrency {
				t.Errorf("reserved concurrency %v < MaxConcurrency %v", rc, tt.concurrency)
			}
		})
	}
}

// TestTheStacksRetryDefaults: a stack deployed with no settings gives every function the retry
// policy that TestIntegrationBadURLsGiveUpWithTheDefaults crawls with (pipeline.DefaultConfig: 4
// requests of a failing URL, waits from 2 s), the queues' maxReceiveCount, and the crawl's
// CDXJ index built from its files rather than one beside each, and runs of 10 URLs of a polite
// host, which the slow lane's function (the fourth) works.
func TestTheStacksRetryDefaults(t *testing.T) {
	_, parsed := synthWith(t, nil)
	want := map[string]string{"CRAWL_MAX_TRIES": "4", "CRAWL_RETRY_WAIT": "2s", "CRAWL_MAX_RECEIVE": "5", "CRAWL_WARC_INDEX": "crawl", "CRAWL_RUN_URLS": "10"}
	fns := crawlFunctionEnvs(parsed)
	for id, vars := range fns {
		for k, v := range want {
			if vars[k] != v {
				t.Errorf("%s: %s = %v, want %s", id, k, vars[k], v)
			}
		}
	}
	if len(fns) != 4 {
		t.Errorf("%d crawl functions in the default stack, want 4 (schedule, fetch, the slow lane's fetchslow and parse)", len(fns))
	}
}

// crawlFunctionEnvs are the environment variables of the template's crawl functions, by logical
// id (a custom resource's function, which has no CRAWL_TABLE, is left out).
func crawlFunctionEnvs(parsed map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range parsed["Resources"].(map[string]any) {
		res := r.(map[string]any)
		if res["Type"] != "AWS::Lambda::Function" {
			continue
		}
		props, _ := res["Properties"].(map[string]any)
		env, _ := props["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if vars["CRAWL_TABLE"] != nil {
			out[id] = vars
		}
	}
	return out
}
