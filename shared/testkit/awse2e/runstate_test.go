package awse2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// TestIntegrationPauseThenResumeLosesNothing pauses a crawl on the AWS adapters while it runs: its
// fetch messages go back to SQS delayed, again and again, with maxReceiveCount 2 and none reaching
// the dead-letter queue, the site serves nothing meanwhile, and once resumed the crawl ends with
// every page fetched once.
func TestIntegrationPauseThenResumeLosesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 60, 5)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 2})
	h.CheckPauseResume(8)
}

// TestIntegrationStopLosesNothing stops a crawl on the AWS adapters while it runs: it drains with
// every URL terminal, the pages served fetched and recorded, the rest stopped and never requested.
func TestIntegrationStopLosesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 60, 5)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.CheckStop(8)
}

// TestIntegrationStatusPauseResumeStopBackendAWS runs `crawl run --backend aws` on a site, a
// missing page and a page robots.txt disallows (a seed: as a link, parse refuses it before its
// admission) to the end, then `crawl failures`, `status`, `pause`, `resume` and `stop` with
// --backend aws, as a user types them.
func TestIntegrationStatusPauseResumeStopBackendAWS(t *testing.T) {
	h := newHarness(t, 10, 3)
	h.setenv()
	seedFile := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seedFile, []byte(h.Site.URL+"\n"+h.Site.URL+"no-such-page\n"+h.Site.URL+"private/secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := runCrawl(t, []string{"run", "--backend", "aws", "--json", "--quiet", "--allow-net", "127.0.0.0/8",
		"--host-rps", "0", "--host-concurrency", "0", "--visibility", "5s", "--concurrency", "8", seedFile})
	h.attach() // so that the queues are deleted when the test ends
	e2etest.CheckFailuresCommand(t, crawlMain, sum.Crawl, map[string]string{
		h.Site.URL + "private/secret": "robots", h.Site.URL + "no-such-page": "http_4xx"}, "--backend", "aws")
	e2etest.CheckAdminCommands(t, crawlMain, sum.Crawl, sum.Fetched, "--backend", "aws")
}

// TestIntegrationRedriveByClass runs `crawl redrive --class http_5xx fetch --backend aws` on SQS
// and DynamoDB: only the URLs that failed with that class go back, the rest stay in the DLQ.
func TestIntegrationRedriveByClass(t *testing.T) {
	h := newHarness(t, 1, 1)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.setenv()
	e2etest.CheckRedriveByClass(t, crawlMain, h.be.Queue, h.be.Table, h.Res.Fetch, h.Res.FetchDLQ, "--backend", "aws")
}

// crawlMain runs the crawl command as a user types it, with the test's environment.
func crawlMain(args ...string) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), crawlTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := cli.Main(ctx, args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestIntegrationAGrowingSeedFileExtendsItsRunningCrawl: on the AWS adapters, a new version of the
// seed file dropped while its crawl runs joins that crawl, which ends once with both sites' pages.
func TestIntegrationAGrowingSeedFileExtendsItsRunningCrawl(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 60, 5)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 2})
	h.CheckAGrowingSeedFileExtendsItsCrawl(8)
}
