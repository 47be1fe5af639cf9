package awse2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
	"github.com/crawlstack/crawlstack/shared/testkit/fakecfn"
)

// TestIntegrationTheCLIFindsAStackByItsName crawls on the emulators, then names the table, bucket
// and queues only by a stack's outputs, served by a CloudFormation on loopback (there is none
// among the emulators): `crawl list`, `crawl status --stack NAME latest` and `crawl export` work
// with none of the variables that name them set, as for a user who deployed the stack.
func TestIntegrationTheCLIFindsAStackByItsName(t *testing.T) {
	h := newHarness(t, 6, 2)
	h.setenv()
	seedFile := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seedFile, []byte(h.Site.URL+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := runCrawl(t, []string{"run", "--backend", "aws", "--json", "--quiet", "--allow-net", "127.0.0.0/8",
		"--host-rps", "0", "--host-concurrency", "0", "--visibility", "5s", "--concurrency", "8", seedFile})
	h.attach()
	cfn := fakecfn.Start(t, map[string]map[string]string{"MyCrawler": {
		"TableName": h.env["CRAWL_TABLE"], "BucketName": h.env["CRAWL_BUCKET"],
		"ScheduleQueueUrl": h.Res.Schedule, "FetchQueueUrl": h.Res.Fetch, "ParseQueueUrl": h.Res.Parse,
		"ScheduleDLQUrl": h.Res.ScheduleDLQ, "FetchDLQUrl": h.Res.FetchDLQ, "ParseDLQUrl": h.Res.ParseDLQ,
	}})
	// Nothing names the stack's resources but the stack: an empty value is unset to the CLI.
	for _, k := range []string{"CRAWL_TABLE", "CRAWL_BUCKET", "CRAWL_QUEUE_PREFIX", "SCHEDULE_QUEUE_URL", "FETCH_QUEUE_URL",
		"PARSE_QUEUE_URL", "SCHEDULE_DLQ_URL", "FETCH_DLQ_URL", "PARSE_DLQ_URL"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", cfn.URL)

	code, out, errOut := crawlMain("list", "--stack", "MyCrawler", "--json")
	var list []struct {
		Crawl, State, SeedFile string
		Fetched                int64
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 || list[0].Crawl != sum.Crawl ||
		list[0].State != "finished" || list[0].Fetched != sum.Fetched || !strings.HasSuffix(list[0].SeedFile, "seeds.txt") {
		t.Fatalf("crawl list --stack: exit %d (%v)\n%s%s\nwant crawl %s finished, %d fetched, its seed file", code, err, out, errOut, sum.Crawl, sum.Fetched)
	}
	code, out, errOut = crawlMain("status", "--stack", "MyCrawler", "latest")
	if code != 0 || !strings.HasPrefix(out, "crawl "+sum.Crawl+": finished") {
		t.Errorf("crawl status --stack latest: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = crawlMain("export", "--stack", "MyCrawler") // the one crawl on record
	if code != 0 || strings.Count(out, "\n") != int(sum.Fetched) || !strings.Contains(out, h.Site.URL) {
		t.Errorf("crawl export --stack: exit %d, %d lines, want %d records\n%s", code, strings.Count(out, "\n"), sum.Fetched, errOut)
	}
	if cfn.Calls() < 3 {
		t.Errorf("CloudFormation was asked %d times, want once a command", cfn.Calls())
	}
	// A crawl that is not on record is said so in the user's words, with no key of the table.
	for _, args := range e2etest.UnknownCrawlCommands("no-such-crawl") {
		code, out, errOut := crawlMain(append(args, "--stack", "MyCrawler")...)
		if code == 0 || !strings.Contains(errOut, "no-such-crawl") {
			t.Errorf("crawl %s --stack: exit %d\n%s%s\nwant a failure that names the crawl", strings.Join(args, " "), code, out, errOut)
		}
		if bad := e2etest.InternalText(out + errOut); bad != "" {
			t.Errorf("crawl %s --stack shows the internal text %q:\n%s%s", strings.Join(args, " "), bad, out, errOut)
		}
	}
	code, _, errOut = crawlMain("status", "--stack", "NoSuchStack")
	if code == 0 || !strings.Contains(errOut, "stack NoSuchStack: no such stack") {
		t.Errorf("a stack that is not there: exit %d\n%s", code, errOut)
	}
}
