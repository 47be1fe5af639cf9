package stacke2e

import (
	"testing"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/frontier"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/testkit/cfntemplate"
)

// TestTheStackHasTheCLIsDefaults reads each function's environment from the synthesized template
// as the function reads it (pipeline.FromEnv) and holds it to `crawl run`'s defaults
// (pipeline.DefaultConfig): one set of defaults, so that a seed file crawls the same after a
// deploy, but for the settings the stack keeps apart on purpose (pipeline.StackMaxPages,
// StackWARCIndex), which `crawl run` names when a crawl starts, its runs of URLs (runUrls 10 with
// the slow lane, where `crawl run` has none unless CRAWL_RUN_URLS says), and those the test's synth
// sets (LAMBDA_TEST_CONTEXT: allowNet, hostRps).
func TestTheStackHasTheCLIsDefaults(t *testing.T) {
	template, _, _ := paths(t)
	tpl, err := cfntemplate.Load(template)
	if err != nil {
		t.Fatal(err)
	}
	want := pipeline.DefaultConfig()
	fns := tpl.OfType("AWS::Lambda::Function")
	if len(fns) < 3 {
		t.Fatalf("the template has %d functions, want schedule, fetch and parse", len(fns))
	}
	checked := 0
	for _, id := range fns {
		env := map[string]string{}
		environment, _ := tpl.Resources[id].Properties["Environment"].(map[string]any)
		vars, _ := environment["Variables"].(map[string]any)
		for k, v := range vars {
			if s, ok := v.(string); ok {
				env[k] = s
			}
		}
		if env["CRAWL_MAX_DEPTH"] == "" {
			continue // not one of the crawler's functions (a custom resource's)
		}
		checked++
		got, err := pipeline.FromEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if got.RunURLs != frontier.DefaultRunURLs || want.RunURLs != 0 {
			t.Errorf("%s: runs of %d URLs, crawl run's %d; want the stack's %d and none", id, got.RunURLs, want.RunURLs, frontier.DefaultRunURLs)
		}
		if got.MaxPages != pipeline.StackMaxPages || got.WARCIndex != pipeline.StackWARCIndex {
			t.Errorf("%s: max pages %d, WARC index %q; want the stack's own %d and %q", id, got.MaxPages, got.WARCIndex,
				pipeline.StackMaxPages, pipeline.StackWARCIndex)
		}
		for name, pair := range map[string][2]any{
			"scope": {got.Scope, want.Scope}, "max depth": {got.MaxDepth, want.MaxDepth},
			"max pages per host": {got.MaxPagesPerHost, want.MaxPagesPerHost}, "user agent": {got.UserAgent, want.UserAgent},
			"max tries": {got.MaxTries, want.MaxTries}, "retry wait": {got.RetryWait, want.RetryWait},
			"retry classes": {retry.FormatClasses(got.RetryClasses), retry.FormatClasses(want.RetryClasses)},
			"max receive":   {got.MaxReceive, want.MaxReceive}, "recrawl prefix": {got.RecrawlPrefix, want.RecrawlPrefix},
			"fingerprint": {got.Fingerprint, want.Fingerprint},
		} {
			if pair[0] != pair[1] {
				t.Errorf("%s: %s %v, want crawl run's %v", id, name, pair[0], pair[1])
			}
		}
	}
	if checked != 4 {
		t.Errorf("checked %d functions' settings, want schedule's, fetch's, the slow lane's fetchslow's and parse's", checked)
	}
}
