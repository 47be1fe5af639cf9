package crawlstack

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	// The choices docs/deploy.md promises.
	if cfg.ScheduleEnabled {
		t.Error("re-crawl rule enabled by default; want disabled until asked")
	}
	if cfg.ScheduleExpression != "rate(1 day)" {
		t.Errorf("schedule expression %q, want rate(1 day)", cfg.ScheduleExpression)
	}
	if !cfg.RetainData {
		t.Error("data not retained by default")
	}
	if cfg.RecrawlPrefix != "seeds/" || cfg.AllowNet != "" || cfg.MaxReceiveCount < 5 {
		t.Errorf("recrawlPrefix %q, allowNet %q, maxReceiveCount %d", cfg.RecrawlPrefix, cfg.AllowNet, cfg.MaxReceiveCount)
	}
	// Idle costs storage only, and no default deletes data: point-in-time
	// recovery is on, nothing expires, and only pages/ moves to Standard-IA,
	// at an age S3 accepts.
	if !cfg.PointInTimeRecovery {
		t.Error("point-in-time recovery off by default")
	}
	for name, lc := range map[string]PrefixLifecycle{"pages": cfg.Pages, "records": cfg.Records, "quarantine": cfg.Quarantine} {
		if lc.ExpirationDays != 0 {
			t.Errorf("%s/ expires after %d days by default, want never", name, lc.ExpirationDays)
		}
	}
	if cfg.Pages.TransitionDays != 90 || cfg.Records.TransitionDays != 0 || cfg.Quarantine.TransitionDays != 0 {
		t.Errorf("transition days pages %d, records %d, quarantine %d; want 90, 0, 0",
			cfg.Pages.TransitionDays, cfg.Records.TransitionDays, cfg.Quarantine.TransitionDays)
	}
	// Nothing billed beyond the free tiers unless asked for: no dashboard,
	// no topic; the alarms stay, as before.
	if cfg.Dashboard || !cfg.Alarms || cfg.AlarmEmail != "" {
		t.Errorf("dashboard %v, alarms %v, alarmEmail %q; want false, true, empty", cfg.Dashboard, cfg.Alarms, cfg.AlarmEmail)
	}
	// Runs of 10 URLs of a polite host, through the slow lane.
	if cfg.RunURLs != 10 || !cfg.slowLane() {
		t.Errorf("runUrls %d (slow lane %v), want 10 and the lane", cfg.RunURLs, cfg.slowLane())
	}
}

func TestConfigFromContext(t *testing.T) {
	tests := []struct {
		name    string
		ctx     map[string]any
		check   func(Config) bool
		wantErr []string // substrings of the error; none means success
	}{
		{name: "no context gives the defaults", ctx: nil,
			check: func(c Config) bool { return c.Scope == DefaultConfig().Scope && c.Fetch == DefaultConfig().Fetch }},
		{name: "strings from cdk -c", ctx: map[string]any{"maxPages": "50", "hostRps": "0.5", "scheduleEnabled": "true", "fetchMemoryMB": "2048"},
			check: func(c Config) bool {
				return c.MaxPages == 50 && c.HostRPS == 0.5 && c.ScheduleEnabled && c.Fetch.MemoryMB == 2048
			}},
		{name: "JSON values from cdk.json", ctx: map[string]any{"maxPages": float64(50), "hostRps": float64(3), "retainData": false, "parseMaxConcurrency": float64(20)},
			check: func(c Config) bool {
				return c.MaxPages == 50 && c.HostRPS == 3 && !c.RetainData && c.Parse.MaxConcurrency == 20
			}},
		{name: "cron expression", ctx: map[string]any{"scheduleExpression": "cron(0 3 * * ? *)"},
			check: func(c Config) bool { return c.ScheduleExpression == "cron(0 3 * * ? *)" }},
		{name: "patterns from cdk.json and cdk -c, commas inside",
			ctx: map[string]any{"include": []any{`^https://a\.test/(x|y){1,3}/`}, "exclude": `["/p/[0-9]{2,}", "\\?sort="]`},
			check: func(c Config) bool {
				return slices.Equal(c.Include, []string{`^https://a\.test/(x|y){1,3}/`}) &&
					slices.Equal(c.Exclude, []string{`/p/[0-9]{2,}`, `\?sort=`})
			}},
		{name: "no patterns by default, an empty string is none",
			ctx:   map[string]any{"exclude": " "},
			check: func(c Config) bool { return len(c.Include) == 0 && len(c.Exclude) == 0 }},
		{name: "maxPagesPerHost", ctx: map[string]any{"maxPagesPerHost": "0"},
			check: func(c Config) bool { return c.MaxPagesPerHost == 0 }},
		{name: "maxPagesPerHost default", ctx: nil,
			check: func(c Config) bool { return c.MaxPagesPerHost == 100_000 }},
		{name: "negative maxPagesPerHost", ctx: map[string]any{"maxPagesPerHost": float64(-1)}, wantErr: []string{`"maxPagesPerHost"`, "0 (no limit) or more"}},
		{name: "pattern string not a JSON array", ctx: map[string]any{"include": `^https://a\.test/`}, wantErr: []string{`"include"`, "JSON array"}},
		{name: "malformed JSON array", ctx: map[string]any{"exclude": `["a"`}, wantErr: []string{`"exclude"`, "JSON array"}},
		{name: "pattern not a string", ctx: map[string]any{"include": []any{"a", float64(1)}}, wantErr: []string{`"include"`, "item 2"}},
		{name: "pattern list not a list", ctx: map[string]any{"exclude": true}, wantErr: []string{`"exclude"`, "JSON array"}},
		{name: "invalid regexp", ctx: map[string]any{"include": `["ok", "(x|y"]`}, wantErr: []string{`"include"`, "pattern 2", "(x|y"}},
		{name: "empty regexp", ctx: map[string]any{"exclude": []any{""}}, wantErr: []string{`"exclude"`, "pattern 1 is empty"}},
		{name: "not a number", ctx: map[string]any{"maxDepth": "three"}, wantErr: []string{`"maxDepth"`, "whole number"}},
		{name: "fraction for an integer", ctx: map[string]any{"maxPages": 1.5}, wantErr: []string{`"maxPages"`}},
		{name: "not a bool", ctx: map[string]any{"scheduleEnabled": "yes please"}, wantErr: []string{`"scheduleEnabled"`}},
		{name: "wrong JSON type", ctx: map[string]any{"userAgent": float64(7)}, wantErr: []string{`"userAgent"`, "string"}},
		{name: "bad scope", ctx: map[string]any{"scope": "web"}, wantErr: []string{`"scope"`, "host, domain or any"}},
		{name: "chrome's fingerprint and user agent", ctx: map[string]any{"tlsFingerprint": "chrome", "userAgent": "browser"},
			check: func(c Config) bool { return c.TLSFingerprint == "chrome" && c.UserAgent == "browser" }},
		{name: "an unknown fingerprint", ctx: map[string]any{"tlsFingerprint": "firefox"}, wantErr: []string{`"tlsFingerprint"`, "chrome"}},
		{name: "a browser's user agent without its fingerprint", ctx: map[string]any{"userAgent": "browser"},
			wantErr: []string{`"userAgent"`, "set tlsFingerprint to chrome"}},
		{name: "rate unit plural", ctx: map[string]any{"scheduleExpression": "rate(1 days)"}, wantErr: []string{`"scheduleExpression"`}},
		{name: "not an expression", ctx: map[string]any{"scheduleExpression": "daily"}, wantErr: []string{`"scheduleExpression"`}},
		{name: "maxReceiveCount below 5", ctx: map[string]any{"maxReceiveCount": "3"}, wantErr: []string{`"maxReceiveCount"`}},
		{name: "a stall time under the checks' quiet time", ctx: map[string]any{"finishStallMinutes": "5"}, wantErr: []string{`"finishStallMinutes"`}},
		{name: "a stall time of two hours", ctx: map[string]any{"finishStallMinutes": "120"},
			check: func(c Config) bool { return c.FinishStallMinutes == 120 }},
		{name: "bad CIDR", ctx: map[string]any{"allowNet": "10.0.0.0/8,localhost"}, wantErr: []string{`"allowNet"`}},
		{name: "prefix without slash", ctx: map[string]any{"recrawlPrefix": "seeds"}, wantErr: []string{`"recrawlPrefix"`}},
		{name: "retention CloudWatch rejects", ctx: map[string]any{"logRetentionDays": "10"}, wantErr: []string{`"logRetentionDays"`}},
		{name: "timeout beyond Lambda's", ctx: map[string]any{"fetchTimeoutSeconds": "901"}, wantErr: []string{`"fetchTimeoutSeconds"`}},
		{name: "concurrency below the SQS minimum", ctx: map[string]any{"scheduleMaxConcurrency": "1"}, wantErr: []string{`"scheduleMaxConcurrency"`}},
		{name: "batch above 10 without a window", ctx: map[string]any{"parseBatchSize": "11", "parseBatchWindowSeconds": "0"},
			wantErr: []string{`"parseBatchWindowSeconds"`, "parseBatchSize"}},
		{name: "zero rps", ctx: map[string]any{"hostRps": "0"}, wantErr: []string{`"hostRps"`}},
		{name: "unknown log levels", ctx: map[string]any{"logLevel": "LOUD", "systemLogLevel": "ERROR"},
			wantErr: []string{`"logLevel"`, `"systemLogLevel"`}},
		{name: "no tries", ctx: map[string]any{"maxTries": "0"}, wantErr: []string{`"maxTries"`}},
		{name: "an index nowhere", ctx: map[string]any{"warcIndex": "none"}, wantErr: []string{`"warcIndex"`}},
		{name: "retry wait over a minute", ctx: map[string]any{"retryWaitSeconds": "61"}, wantErr: []string{`"retryWaitSeconds"`}},
		{name: "retry classes", ctx: map[string]any{"retryClasses": " timeout=1, http_429=/30s,http_5xx=6/10s"},
			check: func(c Config) bool { return c.RetryClasses == " timeout=1, http_429=/30s,http_5xx=6/10s" }},
		{name: "bad retry classes, each named", ctx: map[string]any{"retryClasses": "timout=1,http_4xx=2,http_5xx=30,connect=/2m,connect=1,robots_unavailable"},
			wantErr: []string{`context "retryClasses": "timout" is not a class that is tried again; did you mean "timeout"?`,
				`"http_4xx" is not a class that is tried again`, `http_5xx: tries "30": want 1 to 20`, `connect: wait "2m"`,
				"class connect set twice", `"robots_unavailable": want CLASS=TRIES`}},
		{name: "negative budget", ctx: map[string]any{"budgetUsd": "-2"}, wantErr: []string{`"budgetUsd"`}},
		{name: "patterns that fit Lambda's 4 KB environment", ctx: map[string]any{"exclude": patterns(40)},
			check: func(c Config) bool { return len(c.Exclude) == 40 }},
		{name: "patterns over Lambda's 4 KB environment", ctx: map[string]any{"include": patterns(40), "exclude": patterns(40)},
			wantErr: []string{`"include"`, "over Lambda's limit of 4096", "join several"}},
		{name: "monitoring switches from cdk -c", ctx: map[string]any{"dashboard": "true", "alarms": "false"},
			check: func(c Config) bool { return c.Dashboard && !c.Alarms && c.AlarmEmail == "" }},
		{name: "monitoring switches from cdk.json", ctx: map[string]any{"dashboard": true, "alarms": true, "alarmEmail": "crawl+ops@mail.example.co.uk"},
			check: func(c Config) bool { return c.Dashboard && c.Alarms && c.AlarmEmail == "crawl+ops@mail.example.co.uk" }},
		{name: "dashboard not a bool", ctx: map[string]any{"dashboard": "sometimes"}, wantErr: []string{`"dashboard"`, "true or false"}},
		{name: "alarms not a bool", ctx: map[string]any{"alarms": float64(1)}, wantErr: []string{`"alarms"`, "true or false"}},
		{name: "metrics off", ctx: map[string]any{"metrics": "false"}, check: func(c Config) bool { return !c.Metrics }},
		{name: "metrics not a bool", ctx: map[string]any{"metrics": "some"}, wantErr: []string{`"metrics"`, "true or false"}},
		{name: "collector layer", ctx: map[string]any{"otelCollectorLayerArn": "arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"},
			check: func(c Config) bool {
				return strings.Contains(c.OTelCollectorLayerARN, ":layer:aws-otel-collector-arm64")
			}},
		{name: "collector layer not an ARN", ctx: map[string]any{"otelCollectorLayerArn": "aws-otel-collector"}, wantErr: []string{`"otelCollectorLayerArn"`, "layer version ARN"}},
		{name: "collector layer without a version", ctx: map[string]any{"otelCollectorLayerArn": "arn:aws:lambda:us-east-1:901920570463:layer:otel"}, wantErr: []string{`"otelCollectorLayerArn"`}},
		{name: "tracing to X-Ray", ctx: map[string]any{"otelCollectorLayerArn": "arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"},
			check: func(c Config) bool { return c.Tracing() == TracingXRay }},
		{name: "tracing to an OTLP endpoint", ctx: map[string]any{"otelCollectorLayerArn": "arn:aws:lambda:us-east-1:901920570463:layer:otel:1",
			"otelTracesEndpoint": "https://otlp.example.com:4318"},
			check: func(c Config) bool {
				return c.Tracing() == TracingOTLP && c.OTelTracesEndpoint == "https://otlp.example.com:4318"
			}},
		{name: "tracing off by default", ctx: map[string]any{}, check: func(c Config) bool { return c.Tracing() == TracingOff }},
		{name: "OTLP endpoint without the collector layer", ctx: map[string]any{"otelTracesEndpoint": "https://otlp.example.com"},
			wantErr: []string{`"otelTracesEndpoint"`, "needs otelCollectorLayerArn"}},
		{name: "OTLP endpoint not a URL", ctx: map[string]any{"otelCollectorLayerArn": "arn:aws:lambda:us-east-1:901920570463:layer:otel:1",
			"otelTracesEndpoint": "otlp.example.com:4318"}, wantErr: []string{`"otelTracesEndpoint"`, "https://otlp.example.com", `"otlp.example.com:4318"`}},
		{name: "OTLP endpoint with a query", ctx: map[string]any{"otelCollectorLayerArn": "arn:aws:lambda:us-east-1:901920570463:layer:otel:1",
			"otelTracesEndpoint": "https://otlp.example.com/?key=1"}, wantErr: []string{`"otelTracesEndpoint"`}},
		{name: "alarmEmail not a string", ctx: map[string]any{"alarmEmail": true}, wantErr: []string{`"alarmEmail"`, "string"}},
		{name: "alarmEmail without @", ctx: map[string]any{"alarmEmail": "ops.example.com"}, wantErr: []string{`"alarmEmail"`, "one email address", "ops.example.com"}},
		{name: "alarmEmail without a dotted domain", ctx: map[string]any{"alarmEmail": "ops@localhost"}, wantErr: []string{`"alarmEmail"`, "one email address"}},
		{name: "alarmEmail with a display name", ctx: map[string]any{"alarmEmail": "Ops <ops@example.com>"}, wantErr: []string{`"alarmEmail"`, "one email address"}},
		{name: "alarmEmail list", ctx: map[string]any{"alarmEmail": "a@example.com,b@example.com"}, wantErr: []string{`"alarmEmail"`, "one email address"}},
		{name: "alarmEmail with spaces", ctx: map[string]any{"alarmEmail": " ops@example.com"}, wantErr: []string{`"alarmEmail"`, "one email address"}},
		{name: "alarmEmail without alarms", ctx: map[string]any{"alarms": "false", "alarmEmail": "ops@example.com"},
			wantErr: []string{`"alarmEmail"`, `"alarms" is false`}},
		{name: "extraAlarms without alarms", ctx: map[string]any{"alarms": "false", "extraAlarms": "true"},
			wantErr: []string{`"extraAlarms"`, `"alarms" is false`}},
		{name: "extraAlarms from cdk -c", ctx: map[string]any{"extraAlarms": "true"},
			check: func(c Config) bool { return c.Alarms && c.ExtraAlarms }},
		{name: "storage settings from cdk -c",
			ctx: map[string]any{"pointInTimeRecovery": "false", "pagesTransitionDays": "0", "pagesExpirationDays": "365",
				"recordsTransitionDays": "30", "recordsExpirationDays": "60", "quarantineExpirationDays": "7"},
			check: func(c Config) bool {
				return !c.PointInTimeRecovery && c.Pages == PrefixLifecycle{ExpirationDays: 365} &&
					c.Records == PrefixLifecycle{TransitionDays: 30, ExpirationDays: 60} &&
					c.Quarantine == PrefixLifecycle{ExpirationDays: 7}
			}},
		{name: "storage settings from cdk.json",
			ctx: map[string]any{"pointInTimeRecovery": false, "recordsTransitionDays": float64(120), "pagesExpirationDays": float64(3650)},
			check: func(c Config) bool {
				return !c.PointInTimeRecovery && c.Records == PrefixLifecycle{TransitionDays: 120} &&
					c.Pages == PrefixLifecycle{TransitionDays: 90, ExpirationDays: 3650}
			}},
		{name: "an expiration without a transition may be short", ctx: map[string]any{"pagesTransitionDays": "0", "pagesExpirationDays": "1"},
			check: func(c Config) bool { return c.Pages == PrefixLifecycle{ExpirationDays: 1} }},
		{name: "pointInTimeRecovery not a bool", ctx: map[string]any{"pointInTimeRecovery": "sometimes"},
			wantErr: []string{`"pointInTimeRecovery"`, "true or false"}},
		{name: "days not a whole number", ctx: map[string]any{"recordsExpirationDays": "a year"},
			wantErr: []string{`"recordsExpirationDays"`, "whole number"}},
		{name: "negative transition", ctx: map[string]any{"pagesTransitionDays": "-1"},
			wantErr: []string{`"pagesTransitionDays"`, "0 (never) or more, got -1"}},
		{name: "negative expiration", ctx: map[string]any{"recordsExpirationDays": float64(-30)},
			wantErr: []string{`"recordsExpirationDays"`, "0 (never) or more, got -30"}},
		{name: "transition before S3 moves anything to Standard-IA", ctx: map[string]any{"quarantineTransitionDays": "7"},
			wantErr: []string{`"quarantineTransitionDays"`, "0 (never) or at least 30", "got 7"}},
		{name: "expiration before the default transition", ctx: map[string]any{"pagesExpirationDays": "60"},
			wantErr: []string{`"pagesExpirationDays"`, "after 60 days", "after 90 days", "S3 rejects", `set pagesTransitionDays to 0`}},
		{name: "expiration on the transition day", ctx: map[string]any{"recordsTransitionDays": "45", "recordsExpirationDays": "45"},
			wantErr: []string{`"recordsExpirationDays"`, "S3 rejects"}},
		{name: "expiration within Standard-IA's 30 billed days", ctx: map[string]any{"pagesExpirationDays": "100"},
			wantErr: []string{`"pagesExpirationDays"`, "10 days after", "bills at least 30 days", "day 120 or later"}},
		{name: "expiration 30 days after the transition", ctx: map[string]any{"pagesExpirationDays": "120"},
			check: func(c Config) bool { return c.Pages == PrefixLifecycle{TransitionDays: 90, ExpirationDays: 120} }},
		{name: "every lifecycle error is reported",
			ctx:     map[string]any{"pagesTransitionDays": "-1", "recordsExpirationDays": "-1", "quarantineTransitionDays": "10"},
			wantErr: []string{`"pagesTransitionDays"`, `"recordsExpirationDays"`, `"quarantineTransitionDays"`}},
		{name: "every error is reported", ctx: map[string]any{"scope": "web", "maxPages": "0", "parseMemoryMB": "64"},
			wantErr: []string{`"scope"`, `"maxPages"`, `"parseMemoryMB"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ConfigFromContextMap(tt.ctx) // every key of the table is one of ours
			wantErrors(t, err, tt.wantErr)
			if len(tt.wantErr) == 0 && !tt.check(cfg) {
				t.Errorf("config not as set: %+v", cfg)
			}
		})
	}
}

// TestTestContextKeysExist guards against a typo in testContext silently
// leaving a default in place.
func TestTestContextKeysExist(t *testing.T) {
	known := map[string]bool{}
	for _, k := range ContextKeys() {
		known[k] = true
	}
	for k := range testContext {
		if !known[k] {
			t.Errorf("test context key %q is not a context key", k)
		}
	}
}

// TestDeployDocListsEveryContextKey keeps the configuration table of
// docs/deploy.md complete.
func TestDeployDocListsEveryContextKey(t *testing.T) {
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ContextKeys() {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/deploy.md does not document context key `%s`", k)
		}
	}
}

// TestPatternsEnv: include and exclude reach the handlers as JSON arrays they
// decode to exactly the configured regexps; none is the unset variable.
func TestPatternsEnv(t *testing.T) {
	if got := patternsEnv(nil); got != "" {
		t.Errorf("no patterns: %q, want empty", got)
	}
	in := []string{`^https://a\.test/(x|y){1,3}/`, `[?&]q=<x>`, "\u00e9t\u00e9"}
	var out []string
	if err := json.Unmarshal([]byte(patternsEnv(in)), &out); err != nil || !slices.Equal(out, in) {
		t.Errorf("%q decodes to %q (%v), want %q", patternsEnv(in), out, err, in)
	}
}

// patterns returns n distinct include or exclude patterns of about 40 bytes each.
func patterns(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf(`^https://section-%03d\.example\.com/archive/`, i)
	}
	return out
}

// TestDefaultFunctionsMatchTheSharedCopy holds the function defaults against
// testdata/function-defaults.json, which shared/bench/costrun's tests hold
// StackFunctions against: `make cost` must meter the stack's settings.
func TestDefaultFunctionsMatchTheSharedCopy(t *testing.T) {
	raw, err := os.ReadFile("testdata/function-defaults.json")
	if err != nil {
		t.Fatal(err)
	}
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil {
		t.Fatalf("testdata/function-defaults.json: %v", err)
	}
	delete(byName, "_comment")
	want := map[string]FunctionConfig{}
	for name, v := range byName {
		dec := json.NewDecoder(strings.NewReader(string(v)))
		dec.DisallowUnknownFields()
		var fc FunctionConfig
		if err := dec.Decode(&fc); err != nil {
			t.Fatalf("testdata/function-defaults.json, %s: %v", name, err)
		}
		want[name] = fc
	}
	got := DefaultFunctions()
	if len(got) != len(want) {
		t.Errorf("DefaultFunctions has %d functions, the copy %d", len(got), len(want))
	}
	for name, g := range got {
		if w := want[name]; g != w {
			t.Errorf("%s: DefaultFunctions %+v, testdata/function-defaults.json %+v: change the copy and shared/bench/costrun.StackFunctions with the defaults",
				name, g, w)
		}
	}
	cfg := DefaultConfig()
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		if cfg.Function(name) != got[name] {
			t.Errorf("DefaultConfig's %s is %+v, not DefaultFunctions' %+v", name, cfg.Function(name), got[name])
		}
	}
}

// TestDefaultRunURLsMatchesTheSharedCopy holds the stack's runUrls against
// testdata/stack-defaults.json, which shared/bench/costrun's tests hold StackRunURLs against:
// `make cost` must meter the stack's runs by default.
func TestDefaultRunURLsMatchesTheSharedCopy(t *testing.T) {
	raw, err := os.ReadFile("testdata/stack-defaults.json")
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Comment string `json:"_comment"`
		RunURLs *int   `json:"runUrls"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil || want.RunURLs == nil {
		t.Fatalf("testdata/stack-defaults.json: %v, runUrls %v", err, want.RunURLs)
	}
	if got := DefaultConfig().RunURLs; got != *want.RunURLs {
		t.Errorf("DefaultConfig().RunURLs %d, testdata/stack-defaults.json %d: change the copy and shared/bench/costrun.StackRunURLs with the default",
			got, *want.RunURLs)
	}
}

// TestBatchSizeAndWindow checks the event source mapping's batch rules, with
// errors that name the setting to change.
func TestBatchSizeAndWindow(t *testing.T) {
	tests := []struct {
		name    string
		ctx     map[string]any
		wantErr []string
	}{
		{name: "10 without a window", ctx: map[string]any{"parseBatchSize": "10", "parseBatchWindowSeconds": "0"}},
		{name: "10,000 with a window", ctx: map[string]any{"scheduleBatchSize": float64(10000), "scheduleBatchWindowSeconds": float64(1)}},
		{name: "above 10 without a window", ctx: map[string]any{"fetchBatchSize": "11", "fetchBatchWindowSeconds": "0"},
			wantErr: []string{`"fetchBatchWindowSeconds"`, "at least 1 when fetchBatchSize is above 10", "got 0"}},
		{name: "above 10,000", ctx: map[string]any{"parseBatchSize": "10001"},
			wantErr: []string{`"parseBatchSize"`, "1 to 10000", "got 10001"}},
		{name: "zero", ctx: map[string]any{"scheduleBatchSize": "0"}, wantErr: []string{`"scheduleBatchSize"`, "got 0"}},
		{name: "window above 300", ctx: map[string]any{"fetchBatchWindowSeconds": "301"},
			wantErr: []string{`"fetchBatchWindowSeconds"`, "0 to 300", "got 301"}},
		{name: "batch concurrency", ctx: map[string]any{"fetchBatchConcurrency": "200"}},
		{name: "batch concurrency zero", ctx: map[string]any{"parseBatchConcurrency": "0"},
			wantErr: []string{`"parseBatchConcurrency"`, "1 to 1000", "got 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ConfigFromContext(func(k string) any { return tt.ctx[k] })
			wantErrors(t, err, tt.wantErr)
		})
	}
}

// TestVisibilityCoversTimeoutAndWindow: the queue hides a batch's first
// records for 6 function timeouts plus the window they may wait in.
func TestVisibilityCoversTimeoutAndWindow(t *testing.T) {
	for name, f := range DefaultFunctions() {
		if got, want := f.VisibilityTimeoutSeconds(), 6*f.TimeoutSeconds+f.BatchWindowSeconds; got != want {
			t.Errorf("%s: visibility %d s, want %d", name, got, want)
		}
	}
	// SQS caps the visibility timeout at 12 hours: the largest settings stay below it.
	if got := (FunctionConfig{TimeoutSeconds: 900, BatchWindowSeconds: 300}).VisibilityTimeoutSeconds(); got > 43200 {
		t.Errorf("largest visibility %d s, over SQS's 43200", got)
	}
}

// wantErrors fails the test unless err mentions every one of want, or, when want is empty, unless
// err is nil.
func wantErrors(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want an error mentioning %q, got none", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// A misspelled key is refused with the key it likely meant, a type error does not hide the other
// bad keys, and CDK's own keys (cdk.json's feature flags) pass: every mistake is named in one pass.
func TestUnknownContextKeysAreNamedWithTheRest(t *testing.T) {
	_, err := ConfigFromContextMap(map[string]any{
		"maxPage": "5", "fetchMemoryMb": "1024", "max_depth": "2", "maxDepth": "three", "scope": "web",
		"@aws-cdk/core:checkSecretUsage": true, "aws:cdk:version-reporting": false, "acknowledged-issue-numbers": []any{},
	})
	wantErrors(t, err, []string{`"maxPage"`, `did you mean "maxPages"`, `"fetchMemoryMb"`, `did you mean "fetchMemoryMB"`,
		`"max_depth"`, `did you mean "maxDepth"`, `"maxDepth"`, "whole number", `"scope"`, "host, domain or any"})
	for _, cdk := range []string{"@aws-cdk", "aws:cdk", "acknowledged"} {
		if strings.Contains(err.Error(), cdk) {
			t.Errorf("CDK's own key %s... was refused: %v", cdk, err)
		}
	}
	if _, err := ConfigFromContextMap(map[string]any{"maxPages": "5", "@aws-cdk/aws-iam:minimizePolicies": true}); err != nil {
		t.Errorf("known keys and CDK's: %v", err)
	}
	if got := nearestKey("colour", ContextKeys()); got != "" {
		t.Errorf("a key near nothing suggested %q", got)
	}
}
