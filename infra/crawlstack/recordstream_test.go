package crawlstack

import (
	"maps"
	"os"
	"strings"
	"testing"
)

// The stream's variable is spelled as the functions read it.
func TestRecordStreamSettingMatchesTheFunctions(t *testing.T) {
	b, err := os.ReadFile("../../shared/app/pipeline/config.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"`+envRecordStream+`"`) {
		t.Errorf("shared/app/pipeline/config.go does not read %s: the stack's setting and the functions' differ", envRecordStream)
	}
}

// recordStreamQueueArn gives the parse function, and only it, sqs:SendMessage on that queue and
// its URL, besides exactly what it has without; the default stack has neither.
func TestARecordStreamIsGrantedToParseAlone(t *testing.T) {
	const arn = "arn:aws:sqs:eu-west-1:123456789012:crawl-records"
	_, plain := synthWith(t, map[string]any{})
	_, parsed := synthWith(t, map[string]any{"recordStreamQueueArn": arn})
	for _, fn := range []string{"Schedule", "Fetch", "Parse"} {
		want := maps.Clone(rolePermissionsIn(t, plain, fn+"FunctionServiceRole"))
		if fn == "Parse" {
			want["sqs:SendMessage "+arn] = true
		}
		got := rolePermissionsIn(t, parsed, fn+"FunctionServiceRole")
		samePermissions(t, fn, got, want)
	}
	for id, env := range crawlFunctionEnvs(parsed) {
		url, set := env[envRecordStream]
		if strings.Contains(id, "Parse") != set {
			t.Errorf("%s has %s = %v; want it on the parse function alone", id, envRecordStream, url)
		}
	}
	for id, env := range crawlFunctionEnvs(plain) {
		if env[envRecordStream] != nil {
			t.Errorf("the default stack's %s has a record stream: %v", id, env[envRecordStream])
		}
	}
}

// A value that is not a standard queue's ARN is refused, naming the setting.
func TestBadRecordStreamQueues(t *testing.T) {
	for _, v := range []string{"crawl-records", "arn:aws:sqs:eu-west-1:123456789012:crawl-records.fifo",
		"arn:aws:sns:eu-west-1:123456789012:topic", "https://sqs.eu-west-1.amazonaws.com/123456789012/crawl-records"} {
		_, err := ConfigFromContext(func(key string) any { return map[string]any{"recordStreamQueueArn": v}[key] })
		if err == nil || !strings.Contains(err.Error(), "recordStreamQueueArn") {
			t.Errorf("recordStreamQueueArn=%q: %v; want a refusal that names the setting", v, err)
		}
	}
}
