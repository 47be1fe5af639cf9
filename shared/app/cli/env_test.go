package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsOverEnvironmentOverDefaults runs the built command with CRAWL_* variables, as
// docs/cli.md documents them: a variable sets its flag's value, a flag on the command line wins over
// it, and a bad value names the variable. The site counts what each run fetched.
func TestFlagsOverEnvironmentOverDefaults(t *testing.T) {
	site, seeds := demoSeeds(t, 10, 4, 500)
	env := []string{"CRAWL_ALLOW_NET=127.0.0.0/8", "CRAWL_HOST_RPS=0", "CRAWL_MAX_PAGES=1"}
	code, _, stderr := runBin(t, "", env, "run", "--max-pages", "3", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if n := site.Fetched(); n < 2 || n > 3 {
		t.Errorf("the site served %d pages: want 2 or 3, --max-pages 3 over CRAWL_MAX_PAGES=1 (and the loopback site allowed by CRAWL_ALLOW_NET)", n)
	}
	code, _, stderr = runBin(t, "", []string{"CRAWL_HOST_RPS=fast"}, "run", seeds)
	if code != ExitUsage || !strings.Contains(stderr, `CRAWL_HOST_RPS="fast"`) {
		t.Errorf("a bad variable: exit %d, want %d and the variable named:\n%s", code, ExitUsage, stderr)
	}
	// CRAWL_STATE applies to every command: status reads the state the run wrote.
	dir := t.TempDir()
	if code, _, stderr := runBin(t, dir, append(env, "CRAWL_STATE=elsewhere"), "run", seeds); code != ExitOK {
		t.Fatalf("run with CRAWL_STATE: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := runBin(t, dir, []string{"CRAWL_STATE=elsewhere"}, "status")
	if code != ExitOK || !strings.Contains(stdout, "seeds-") {
		t.Errorf("status with CRAWL_STATE: exit %d, want the crawl listed\n%s%s", code, stdout, stderr)
	}
}

// TestInvokeDefaultsToTheEmbeddedBackend runs crawl invoke as a bare make invoke does, with no
// AWS in the environment: it runs on the embedded backend, as crawl run does.
func TestInvokeDefaultsToTheEmbeddedBackend(t *testing.T) {
	code, stdout, stderr := runBin(t, "", []string{"AWS_ENDPOINT_URL=", "AWS_REGION=", "CRAWL_TABLE=", "CRAWL_BUCKET="},
		"invoke", "schedule", eventPath(t, "s3-test-event.json"))
	if code != ExitOK || !strings.Contains(stdout, "batchItemFailures") {
		t.Errorf("a bare crawl invoke: exit %d, want 0 and the handler's response\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// eventPath is the absolute path of a sample in the repository's events/ folder.
func eventPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sampleFunctions is the function each sample in events/ is for; a sample missing here fails
// TestEverySampleRunsAsItIs, so that every sample is run.
var sampleFunctions = map[string]string{
	"eventbridge-tick.json": "schedule", "s3-put-seed.json": "schedule", "s3-test-event.json": "schedule",
	"sqs-links.json": "schedule", "sqs-links-with-poison.json": "schedule", "sqs-fetch.json": "fetch", "sqs-parse.json": "parse",
}

// TestEverySampleRunsAsItIs runs crawl invoke on each sample in events/, as it is, on a fresh
// state, as sam local invoke runs its samples: each must exit 0 with no failed record. The state
// is read back for what the samples that read the bucket did: the seed report, and the record.
func TestEverySampleRunsAsItIs(t *testing.T) {
	files, err := filepath.Glob(eventPath(t, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in events/: %v", err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			fn := sampleFunctions[name]
			if fn == "" {
				t.Fatalf("%s is not in sampleFunctions: say which function it is for", name)
			}
			dir := t.TempDir()
			code, stdout, stderr := runBin(t, dir, nil, "invoke", fn, file)
			if code != ExitOK || strings.Contains(stdout, "itemIdentifier") {
				t.Fatalf("crawl invoke %s %s: exit %d\nstdout: %s\nstderr: %s", fn, name, code, stdout, stderr)
			}
			blobs := filepath.Join(dir, "crawl-state", "blobs")
			switch name {
			case "s3-put-seed.json":
				report, err := os.ReadFile(filepath.Join(blobs, "crawls", "my-seeds-25f56f7b9ed9", "seeds.json"))
				if err != nil || !strings.Contains(string(report), "not a url") {
					t.Errorf("the seed report: %s, %v; want it to name the bad line", report, err)
				}
			case "sqs-parse.json":
				recs, _ := filepath.Glob(filepath.Join(blobs, "records", "crawl=my-seeds-25f56f7b9ed9", "dt=*", "*.jsonl"))
				if len(recs) != 1 {
					t.Fatalf("%d record files, want 1", len(recs))
				}
				b, err := os.ReadFile(recs[0])
				if err != nil || !strings.Contains(string(b), `"title":"Example"`) {
					t.Errorf("the record: %s, %v; want the sample page's", b, err)
				}
			}
		})
	}
}
