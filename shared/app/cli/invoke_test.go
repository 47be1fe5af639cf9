package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	samples "github.com/crawlstack/crawlstack/events"
	"github.com/crawlstack/crawlstack/shared/local/fileblob"
)

// invokeSample writes the sample (moved to origin when set) to a temp file and runs
// `crawl invoke --backend embedded --state state FN FILE`.
func invokeSample(t *testing.T, state, fn, name, origin string, extra ...string) (int, string, string) {
	t.Helper()
	b, err := samples.Read(name)
	if err != nil {
		t.Fatal(err)
	}
	if origin != "" {
		b = samples.Rewrite(b, origin)
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"invoke", "--backend", "embedded", "--state", state}, extra...)
	return invokeMain(t, append(args, fn, file)...)
}

func invokeMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// response decodes the printed SQS response and returns its failed message ids.
func response(t *testing.T, stdout string) []string {
	t.Helper()
	var r events.SQSEventResponse
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not an SQS response: %v\n%s", err, stdout)
	}
	if !strings.Contains(stdout, `"batchItemFailures": [`) {
		t.Errorf("stdout = %s, want a batchItemFailures array", stdout)
	}
	ids := []string{}
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func TestInvokeScheduleSamples(t *testing.T) {
	cases := []struct {
		name        string
		quarantined int
	}{
		{samples.S3TestEvent, 0},
		{samples.SQSLinks, 0},
		{samples.SQSLinksWithPoison, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			code, stdout, stderr := invokeSample(t, state, "schedule", c.name, "")
			if code != ExitOK {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
			}
			if ids := response(t, stdout); len(ids) != 0 {
				t.Errorf("batchItemFailures = %v, want none", ids)
			}
			store, err := fileblob.New(filepath.Join(state, "blobs"))
			if err != nil {
				t.Fatal(err)
			}
			q, err := store.List(context.Background(), "quarantine/schedule/")
			if err != nil || len(q) != c.quarantined {
				t.Errorf("quarantined %v, %v; want %d", q, err, c.quarantined)
			}
		})
	}
}

// TestInvokeScheduleThenFetch admits the links sample, then fetches the fetch sample, both moved
// onto a loopback site: the state dir carries the admissions from one invoke to the next.
func TestInvokeScheduleThenFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<title>x</title>")
	}))
	defer srv.Close()
	state := t.TempDir()
	// No host rate: with one, schedule books the host's politeness slots for the URLs it admits,
	// and the sample's fetch messages, which hold none, would wait behind them.
	if code, _, stderr := invokeSample(t, state, "schedule", samples.SQSLinks, srv.URL, "--host-rps", "0"); code != ExitOK {
		t.Fatalf("schedule: exit %d; stderr:\n%s", code, stderr)
	}
	code, stdout, stderr := invokeSample(t, state, "fetch", samples.SQSFetch, srv.URL, "--allow-net", "127.0.0.0/8", "--host-rps", "0")
	if code != ExitOK {
		t.Fatalf("fetch: exit %d; stderr:\n%s", code, stderr)
	}
	if ids := response(t, stdout); len(ids) != 0 {
		t.Errorf("batchItemFailures = %v, want none; stderr:\n%s", ids, stderr)
	}
	store, err := fileblob.New(filepath.Join(state, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	if pages, err := store.List(context.Background(), "pages/"); err != nil || len(pages) != 2 {
		t.Errorf("WARC files %v, %v; want the batch's one and its index", pages, err)
	}
}

func TestInvokeErrors(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "bad.json")
	unknown := filepath.Join(dir, "unknown.json")
	writeEvent(t, notJSON, `{"Records": [`)
	writeEvent(t, unknown, `{"httpMethod": "GET"}`)
	state := filepath.Join(dir, "state")
	emb := []string{"invoke", "--backend", "embedded", "--state", state}
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown function", append(emb, "crawl", unknown), ExitUsage, `unknown function "crawl"`},
		{"missing event file", append(emb, "fetch", filepath.Join(dir, "nope.json")), ExitUsage, "cannot read the event file"},
		{"unparseable event file", append(emb, "parse", notJSON), ExitUsage, "is not a JSON document"},
		{"no event file", append(emb, "fetch"), ExitUsage, "want a function and an event file"},
		{"bad backend", []string{"invoke", "--backend", "gcp", "fetch", unknown}, ExitUsage, `--backend "gcp"`},
		{"state with the aws backend", []string{"invoke", "--backend", "aws", "--state", state, "fetch", unknown}, ExitUsage, "--state is for the embedded backend"},
		{"host rate with the aws backend", []string{"invoke", "--backend", "aws", "--host-rps", "2", "fetch", unknown}, ExitUsage, "--host-rps is for the embedded backend"},
		{"schedule rejects the event", append(emb, "schedule", unknown), ExitFailed, "unrecognised event"},
		{"fetch wants SQS records", append(emb, "fetch", unknown), ExitFailed, "not an SQS event"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := invokeMain(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, c.code, c.stderr)
			}
			if c.code == ExitFailed {
				var e struct{ ErrorMessage, ErrorType string }
				if err := json.Unmarshal([]byte(stdout), &e); err != nil || e.ErrorMessage == "" || e.ErrorType == "" {
					t.Errorf("stdout = %q, want Lambda's error response", stdout)
				}
			}
		})
	}
}

func writeEvent(t *testing.T, name, body string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestInvokeAWSNeedsItsConfiguration(t *testing.T) {
	t.Setenv("CRAWL_TABLE", "")
	t.Setenv("CRAWL_BUCKET", "")
	file := filepath.Join(t.TempDir(), "ev.json")
	writeEvent(t, file, `{"Records": []}`)
	code, _, stderr := invokeMain(t, "invoke", "--backend", "aws", "fetch", file)
	if code != ExitFailed || !strings.Contains(stderr, "CRAWL_TABLE") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming CRAWL_TABLE", code, stderr)
	}
}

// TestInvokeAWSTakesAllowNet: --allow-net reaches the handlers of the aws backend (it was ignored
// there, so a loopback site was never fetched). A malformed range fails the wiring and is named.
func TestInvokeAWSTakesAllowNet(t *testing.T) {
	t.Setenv("CRAWL_TABLE", "table")
	t.Setenv("CRAWL_BUCKET", "bucket")
	t.Setenv("CRAWL_ALLOW_NET", "")
	file := filepath.Join(t.TempDir(), "ev.json")
	writeEvent(t, file, `{"Records": []}`)
	code, _, stderr := invokeMain(t, "invoke", "--backend", "aws", "--allow-net", "127.0.0.0/8",
		"--allow-net", "no-such-range", "fetch", file)
	if code != ExitFailed || !strings.Contains(stderr, "allow-net") || !strings.Contains(stderr, `"no-such-range"`) {
		t.Errorf("exit %d, stderr %q; want exit 1 naming the bad --allow-net range", code, stderr)
	}
}

func TestAllowNetEnv(t *testing.T) {
	env := map[string]string{"CRAWL_ALLOW_NET": "10.0.0.0/8", "CRAWL_TABLE": "t"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name  string
		env   string
		allow []string
		want  string
	}{
		{"no flag", "10.0.0.0/8", nil, "10.0.0.0/8"},
		{"flag only", "", []string{"127.0.0.0/8"}, "127.0.0.0/8"},
		{"blank variable", "  ", []string{"127.0.0.0/8", "::1"}, "127.0.0.0/8,::1"},
		{"both", "10.0.0.0/8", []string{"127.0.0.0/8", "::1"}, "10.0.0.0/8,127.0.0.0/8,::1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env["CRAWL_ALLOW_NET"] = c.env
			get := allowNetEnv(getenv, c.allow)
			if got := get("CRAWL_ALLOW_NET"); got != c.want {
				t.Errorf("CRAWL_ALLOW_NET = %q, want %q", got, c.want)
			}
			if got := get("CRAWL_TABLE"); got != "t" {
				t.Errorf("CRAWL_TABLE = %q, want it unchanged", got)
			}
		})
	}
}
