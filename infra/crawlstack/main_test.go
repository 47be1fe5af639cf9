package crawlstack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// The stack is synthesized once for the whole package (a synth starts a Node
// process and takes seconds). These are what the tests inspect.
var (
	tmpl     assertions.Template
	tmplJSON map[string]any // the same template, parsed, for cross-references
	testCfg  Config
	testDist string // the fake function binaries, for synthWith
)

// testContext overrides settings so the tests prove context values reach the
// template. Strings are what `cdk -c` passes; numbers and bools what cdk.json
// holds. Defaults not overridden here are checked against DefaultConfig.
var testContext = map[string]any{
	"scope":                   "domain",
	"maxDepth":                "4",
	"maxPages":                float64(250),
	"maxPagesPerHost":         "40",
	"include":                 []any{`^https://a\.test/v[0-9]{1,2}/`, `^https://b\.test/(x|y){1,3}/`}, // as cdk.json holds it
	"exclude":                 `["[?&]sort=", "/page/[0-9]{3,}"]`,                                     // as cdk -c passes it
	"hostRps":                 "2.5",
	"budgetUsd":               "12.5",
	"userAgent":               "testbot/1.0",
	"allowNet":                "10.0.0.0/8,127.0.0.1/32",
	"recrawlPrefix":           "recrawl/",
	"scheduleExpression":      "rate(6 hours)",
	"scheduleEnabled":         true,
	"maxReceiveCount":         "6",
	"maxTries":                "3",
	"warcIndex":               "file",
	"retryWaitSeconds":        float64(5),
	"retryClasses":            "timeout=2,http_5xx=6/10s",
	"fetchTimeoutSeconds":     "100",
	"fetchMemoryMB":           float64(1024),
	"parseMaxConcurrency":     float64(7),
	"scheduleBatchSize":       "5",
	"fetchBatchWindowSeconds": "5",
	"parseBatchConcurrency":   float64(20),
	"dashboard":               "true",
	"extraAlarms":             "true",
	"alarmEmail":              "ops@example.com",
}

func TestMain(m *testing.M) {
	code, err := synth(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func synth(m *testing.M) (int, error) {
	defer jsii.Close()
	dist, err := os.MkdirTemp("", "crawlstack-dist-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dist)
	testDist = dist
	// The render image's folder holds its Dockerfile too (render.go); synth stages it, and builds
	// nothing.
	if err := os.MkdirAll(filepath.Join(dist, FnRender), 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dist, FnRender, renderImageFile), []byte("FROM scratch\nCOPY bootstrap /bootstrap\n"), 0o644); err != nil {
		return 0, err
	}
	for _, fn := range []string{FnSchedule, FnFetch, FnFetchSlow, FnParse, FnRender} {
		if err := os.MkdirAll(filepath.Join(dist, fn), 0o755); err != nil {
			return 0, err
		}
		// A distinct body per function, so each gets its own asset.
		body := "#!/bin/sh\necho fake " + fn + "\n"
		if err := os.WriteFile(filepath.Join(dist, fn, "bootstrap"), []byte(body), 0o755); err != nil {
			return 0, err
		}
	}

	ctx := map[string]any{}
	for k, v := range testContext {
		ctx[k] = v
	}
	testCfg, tmpl, tmplJSON, err = synthStack(ctx)
	if err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// synthStack synthesizes a stack named Test with the feature flags of
// cdk.json, the fake binaries and ctx (which it changes) as context.
func synthStack(ctx map[string]any) (Config, assertions.Template, map[string]any, error) {
	flags, err := cdkJSONContext("../cdk.json")
	if err != nil {
		return Config{}, nil, nil, err
	}
	for k, v := range flags {
		if _, set := ctx[k]; !set {
			ctx[k] = v
		}
	}
	ctx["distDir"] = testDist
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	cfg, err := ConfigFromContext(func(key string) any {
		return app.Node().TryGetContext(jsii.String(key))
	})
	if err != nil {
		return Config{}, nil, nil, err
	}
	stack := NewStack(app, "Test", &Props{Config: cfg})
	t := assertions.Template_FromStack(stack, nil)
	raw, err := json.Marshal(t.ToJSON())
	if err != nil {
		return Config{}, nil, nil, err
	}
	var parsed map[string]any
	if err := json.Unmarshal(raw, &parsed); err != nil {
		return Config{}, nil, nil, err
	}
	return cfg, t, parsed, nil
}

// synthWith synthesizes another stack with only ctx over the defaults (not
// testContext), for settings that change which resources exist.
func synthWith(t *testing.T, ctx map[string]any) (assertions.Template, map[string]any) {
	t.Helper()
	c := map[string]any{}
	for k, v := range ctx {
		c[k] = v
	}
	_, tm, parsed, err := synthStack(c)
	if err != nil {
		t.Fatalf("synth with %v: %v", ctx, err)
	}
	return tm, parsed
}

// cdkJSONContext returns the context of cdk.json (the feature flags), so the
// tests synthesize what `cdk synth` and `cdk deploy` do.
func cdkJSONContext(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Context) == 0 {
		return nil, fmt.Errorf("%s: no context (feature flags)", path)
	}
	return f.Context, nil
}

// check runs one assertion. A failed assertions check panics; check turns the
// panic into a test error so the other checks still run.
func check(t *testing.T, what string, assert func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assert()
}

// hashSuffix is the 8 hex digits CDK appends to logical ids.
var hashSuffix = regexp.MustCompile(`[0-9A-F]{8}$`)

// logicalID returns the logical id of the one resource of type typ whose id
// is name plus CDK's hash suffix.
func logicalID(t *testing.T, typ, name string) string {
	t.Helper()
	return logicalIDIn(t, tmplJSON, typ, name)
}

// logicalIDIn is logicalID in another parsed template (synthWith's).
func logicalIDIn(t *testing.T, template map[string]any, typ, name string) string {
	t.Helper()
	var found []string
	for id, r := range resourcesOf(template) {
		if r["Type"] == typ && hashSuffix.ReplaceAllString(id, "") == name {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s named %s, found %v", typ, name, found)
	}
	return found[0]
}

func resources() map[string]map[string]any {
	return resourcesOf(tmplJSON)
}

// resourcesOf returns the Resources of a parsed template by logical id.
func resourcesOf(template map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range template["Resources"].(map[string]any) {
		out[id] = r.(map[string]any)
	}
	return out
}

// props returns the Properties of a resource by logical id.
func props(t *testing.T, id string) map[string]any {
	t.Helper()
	r, ok := resources()[id]
	if !ok {
		t.Fatalf("no resource %s", id)
	}
	p, _ := r["Properties"].(map[string]any)
	return p
}

func getAtt(id, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{id, attr}}
}

func ref(id string) map[string]any {
	return map[string]any{"Ref": id}
}

// like is Match_ObjectLike over a plain map.
func like(m map[string]any) assertions.Matcher {
	return assertions.Match_ObjectLike(&m)
}

// matchProps checks the Properties of one resource, by logical id, against m.
func matchProps(t *testing.T, id string, m assertions.Matcher) {
	t.Helper()
	check(t, id, func() {
		r := m.Test(props(t, id))
		if *r.HasFailed() {
			t.Errorf("%s: %s", id, *r.RenderMismatch())
		}
	})
}

// equals is Match_ObjectEquals over a plain map.
func equals(m map[string]any) assertions.Matcher {
	return assertions.Match_ObjectEquals(&m)
}
