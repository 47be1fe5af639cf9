package awstest_test

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

func TestUniqueName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z][a-z0-9-]{1,61}[a-z0-9]$`)
	seen := map[string]bool{}
	for range 20 {
		n := awstest.UniqueName(t, "crawl")
		if !valid.MatchString(n) || len(n) > 63 {
			t.Errorf("UniqueName = %q, not a valid bucket/table/queue name", n)
		}
		if seen[n] {
			t.Errorf("UniqueName repeated %q", n)
		}
		seen[n] = true
	}
	t.Run(strings.Repeat("VeryLongSubtestName_", 6), func(t *testing.T) {
		if n := awstest.UniqueName(t, "crawl"); len(n) > 63 || !valid.MatchString(n) {
			t.Errorf("UniqueName = %q (%d chars), want a valid name of at most 63", n, len(n))
		}
	})
}

func TestHasEndpoint(t *testing.T) {
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(v, "")
	}
	if awstest.HasEndpoint() {
		t.Fatal("HasEndpoint with no variables set = true")
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000")
	if !awstest.HasEndpoint() {
		t.Error("HasEndpoint with AWS_ENDPOINT_URL_DYNAMODB set = false")
	}
}

// recorder is a testing.TB that records how a helper ended the test. Like testing.T, its Skip and
// Fatal stop the goroutine (runtime.Goexit), so the helper under test goes no further.
type recorder struct {
	testing.TB        // nil: a call to any other method panics, which the test would see
	ended      string // "skip", "fatal" or "" (returned normally)
	msg        string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.ended, r.msg = "skip", fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.ended, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) {
	r.ended, r.msg = "fatal", fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended, r.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own (Goexit must not end the real test) and
// returns the recorder once f has returned or stopped.
func run(f func(t testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

// TestMissingEndpoint holds Config and RequireService to the contract of `make test`: a missing
// endpoint skips a plain `go test`, and fails under CRAWL_TEST_REQUIRE_EMULATORS=1 with a message
// naming the variable and the emulators.
func TestMissingEndpoint(t *testing.T) {
	config := func(t testing.TB) { awstest.Config(t) }
	sqs := func(t testing.TB) { awstest.RequireService(t, "SQS") }
	tests := []struct {
		name    string
		require string            // CRAWL_TEST_REQUIRE_EMULATORS
		env     map[string]string // endpoint variables set (the others are empty)
		f       func(t testing.TB)
		ended   string
		msg     []string // substrings of the message
	}{
		{"Config skips without endpoint", "", nil, config, "skip",
			[]string{"no AWS endpoint", "AWS_ENDPOINT_URL_SQS"}},
		{"Config skips when require is not 1", "0", nil, config, "skip", []string{"no AWS endpoint"}},
		{"Config fails under require", "1", nil, config, "fatal", []string{
			"no AWS endpoint", "AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_S3",
			"CRAWL_TEST_REQUIRE_EMULATORS=1", "make test", ".cache/emulators/env"}},
		{"Config returns with one service's endpoint", "1", map[string]string{"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1"},
			config, "", nil},
		{"RequireService skips without endpoint", "", nil, sqs, "skip",
			[]string{"no SQS endpoint", "AWS_ENDPOINT_URL_SQS"}},
		{"RequireService fails under require", "1", map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1"}, sqs, "fatal",
			[]string{"no SQS endpoint", "AWS_ENDPOINT_URL_SQS", "CRAWL_TEST_REQUIRE_EMULATORS=1", "make test"}},
		{"RequireService passes on its own variable", "1", map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:1"}, sqs, "", nil},
		{"RequireService passes on the general variable", "1", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}, sqs, "", nil},
		{"S3 notifications skip even under require", "1", map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:1"},
			awstest.RequireS3Notifications, "skip", []string{"LocalStack", "emulators"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3"} {
				t.Setenv(v, tt.env[v])
			}
			t.Setenv(awstest.EnvRequireEmulators, tt.require)
			t.Setenv(awstest.EnvLocalStack, "")
			t.Setenv(awstest.EnvEmulators, "")
			r := run(tt.f)
			if r.ended != tt.ended {
				t.Fatalf("ended with %q (%q), want %q", r.ended, r.msg, tt.ended)
			}
			for _, want := range tt.msg {
				if !strings.Contains(r.msg, want) {
					t.Errorf("message %q does not contain %q", r.msg, want)
				}
			}
		})
	}
}
