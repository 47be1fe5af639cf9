package stacke2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/aws/callrecord"
	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/aws/s3blob"
	"github.com/crawlstack/crawlstack/shared/aws/sqsqueue"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/cfntemplate"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
	"github.com/crawlstack/crawlstack/shared/testkit/lambdarie"
	"github.com/crawlstack/crawlstack/shared/testkit/stackrun"
)

// The variables that name what the tests run (set by the Makefile's test-emulators target).
const (
	envTemplate = "CRAWL_TEST_STACK_TEMPLATE" // cdk synth's Crawlstack.template.json
	envDist     = "CRAWL_TEST_LAMBDA_DIST"    // <dist>/<fn>/bootstrap, built for the host
	envRIE      = "CRAWL_TEST_RIE"            // the aws-lambda-rie binary
)

// maxProcesses caps the emulator processes per function. The template lets fetch run 10
// invocations at once; two per function keep the functions, three emulators and the test
// within a 2-core machine, and still run invocations of one function side by side.
const maxProcesses = 2

// fetchSlow is the slow lane's function, which the stack has by default (runUrls 10): schedule
// sends the runs of polite hosts to its queue.
const fetchSlow = "fetchslow"

// deployment is the template deployed onto the emulators, with each function running under the
// runtime emulator.
type deployment struct {
	t     *testing.T
	cfg   aws.Config
	stack *stackrun.Stack
	pools map[string]*lambdarie.Pool
	// callDir holds the call logs: one file per function process, and one per function for the
	// event source mapping's calls, which Lambda makes with the function's role.
	callDir string
	// pollers are the mappings' queue clients, per function, recorded.
	pollers map[string]*sqsqueue.Queue
	looker  *sqsqueue.Queue // the harness's own look at the queues, not recorded
	clients awsconfig.Clients
	// bus is the functions' EventBridge endpoint, a stand-in (events_test.go) at busURL.
	bus    *eventBus
	busURL string
	// over is set in every function's environment over the template's.
	over map[string]string
	// imported are the emulator's URLs of the queues the template imports (importQueues), by the
	// variable that names each.
	imported map[string]string
}

// paths returns the template, dist folder and emulator binary the Makefile names, or ends the
// test: a failure under CRAWL_TEST_REQUIRE_EMULATORS=1 (make test must run this), a skip
// elsewhere.
func paths(t *testing.T) (template, dist, rie string) {
	t.Helper()
	template, dist, rie = os.Getenv(envTemplate), os.Getenv(envDist), os.Getenv(envRIE)
	if template != "" && dist != "" && rie != "" {
		return template, dist, rie
	}
	msg := fmt.Sprintf("%s, %s and %s must name the synthesized template, the host-built bootstraps "+
		"and aws-lambda-rie: run `make test-emulators` (or `make test`), which builds them", envTemplate, envDist, envRIE)
	if os.Getenv(awstest.EnvRequireEmulators) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return
}

// deploy deploys the template onto the emulators and starts every function's processes.
func deploy(t *testing.T) *deployment {
	t.Helper()
	templatePath, dist, rie := paths(t)
	return deployTemplate(t, templatePath, dist, rie, nil)
}

// deployTemplate deploys the template at templatePath, with over set in every function's
// environment over the template's (nil: nothing).
func deployTemplate(t *testing.T, templatePath, dist, rie string, over map[string]string) *deployment {
	t.Helper()
	cfg := awstest.Config(t)
	for _, s := range []string{"SQS", "DYNAMODB", "S3"} {
		awstest.RequireService(t, s)
	}
	tmpl, err := cfntemplate.Load(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d := &deployment{t: t, cfg: cfg, clients: awsconfig.NewClients(cfg), callDir: t.TempDir(),
		pools: map[string]*lambdarie.Pool{}, pollers: map[string]*sqsqueue.Queue{}, over: over}
	d.bus, d.busURL = newEventBus(t)
	phys, err := stackrun.Deploy(ctx, stackrun.Clients{SQS: d.clients.SQS, DynamoDB: d.clients.DynamoDB, S3: d.clients.S3},
		tmpl, shortName(t), cfg.Region)
	if err != nil {
		t.Fatalf("deploy the template: %v", err)
	}
	if d.stack, err = stackrun.Read(tmpl, phys); err != nil {
		t.Fatalf("read the template: %v", err)
	}
	d.imported = d.importQueues(ctx)
	d.looker = sqsqueue.New(d.clients.SQS)
	for _, name := range d.crawlFunctions() {
		f := d.stack.Functions[name]
		if f == nil || f.Mapping == nil {
			t.Fatalf("the template has no %s function with an SQS event source mapping", name)
		}
		n := min(max(f.Mapping.MaxConcurrency, 1), maxProcesses)
		pool, err := lambdarie.StartPool(ctx, n, func(i int) lambdarie.Options {
			return lambdarie.Options{RIE: rie, Bootstrap: filepath.Join(dist, name, "bootstrap"),
				Env: d.env(f, filepath.Join(d.callDir, fmt.Sprintf("%s-%d.jsonl", name, i)))}
		})
		if err != nil {
			t.Fatalf("start %s under the runtime emulator: %v", name, err)
		}
		t.Cleanup(pool.Close)
		d.pools[name] = pool
		d.pollers[name] = d.recordedQueue(name)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for name, pool := range d.pools {
				t.Logf("%s output:\n%s", name, tail(pool.Output(), 60))
			}
		}
	})
	return d
}

// crawlFunctions are the template's functions that an event source mapping feeds: schedule, fetch
// and parse, and the slow lane's fetchslow when the template has it (runUrls of 2 or more).
func (d *deployment) crawlFunctions() []string {
	names := []string{"schedule", "fetch", "parse"}
	if d.stack.Functions[fetchSlow] != nil {
		names = append(names, fetchSlow)
	}
	return names
}

// resources are the deployment's queues, as the e2etest harness names them.
// crawlHarness is the e2e harness of site on the deployed stack's table, bucket and queues, and
// the stack's bucket.
func (d *deployment) crawlHarness(t *testing.T, site *e2etest.Site) (*e2etest.Harness, *s3blob.Store) {
	sched := d.stack.Functions["schedule"]
	blobs := s3blob.New(d.clients.S3, sched.Env["CRAWL_BUCKET"])
	return &e2etest.Harness{T: t, Site: site, DLQSettle: 10 * time.Second, Backend: e2etest.Backend{
		Queue: d.looker, Table: dynamotable.New(d.clients.DynamoDB, sched.Env["CRAWL_TABLE"]), Blobs: blobs, Res: d.resources()}}, blobs
}

// uploadSeed drops a seed file naming site's root into the stack's bucket, seeds/x.txt, as a
// user starts a crawl.
func (d *deployment) uploadSeed(ctx context.Context, t *testing.T, site *e2etest.Site) {
	t.Helper()
	bucket := d.stack.Functions["schedule"].Env["CRAWL_BUCKET"]
	if _, err := d.clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("seeds/x.txt"),
		Body: bytes.NewReader([]byte(site.URL + "\n")), ContentType: aws.String("text/plain")}); err != nil {
		t.Fatalf("upload the seed file: %v", err)
	}
}

func (d *deployment) resources() e2etest.Resources {
	fns := d.stack.Functions
	res := e2etest.Resources{
		Schedule: fns["schedule"].Mapping.QueueURL, ScheduleDLQ: fns["schedule"].Mapping.DLQURL,
		Fetch: fns["fetch"].Mapping.QueueURL, FetchDLQ: fns["fetch"].Mapping.DLQURL,
		Parse: fns["parse"].Mapping.QueueURL, ParseDLQ: fns["parse"].Mapping.DLQURL,
	}
	if f := fns[fetchSlow]; f != nil {
		res.FetchSlow = f.Mapping.QueueURL
		if f.Mapping.DLQURL != res.FetchDLQ {
			d.t.Fatalf("the slow lane's dead-letter queue is %s, want fetch's %s", f.Mapping.DLQURL, res.FetchDLQ)
		}
	}
	return res
}

// env is the whole environment of a function's process: what the template gives it, the
// emulators' endpoints and credentials (Lambda gives the role's), and the call log.
func (d *deployment) env(f *stackrun.Function, callLog string) []string {
	vars := map[string]string{}
	for k, v := range f.Env {
		vars[k] = v
	}
	for _, k := range []string{awsconfig.EnvEndpoint, awsconfig.EnvEndpointSQS, awsconfig.EnvEndpointDynamoDB,
		awsconfig.EnvEndpointS3, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		if v := os.Getenv(k); v != "" {
			vars[k] = v
		}
	}
	// The template's drain checks, shortened for a crawl of seconds, and the stand-in bus.
	if _, ok := vars["CRAWL_FINISH_EVERY"]; ok {
		vars["CRAWL_FINISH_EVERY"], vars["CRAWL_FINISH_QUIET"] = testFinishEvery, testFinishQuiet
	}
	vars["AWS_ENDPOINT_URL_EVENTBRIDGE"] = d.busURL
	for k, v := range d.over {
		vars[k] = v
	}
	vars[callrecord.EnvLog] = callLog
	vars[callrecord.EnvAccount] = d.stack.Physical.Account
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// recordedQueue is the queue client of a function's event source mapping: its calls are recorded
// as the function's, since Lambda polls with the function's role.
func (d *deployment) recordedQueue(name string) *sqsqueue.Queue {
	f, err := os.OpenFile(filepath.Join(d.callDir, name+"-mapping.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { f.Close() })
	cfg := d.cfg.Copy()
	callrecord.New(f, d.stack.Functions[name].Env["AWS_LAMBDA_FUNCTION_NAME"], d.stack.Physical.Account).Register(&cfg)
	return sqsqueue.New(sqs.NewFromConfig(cfg))
}

// calls returns every recorded call of the named function: its own and its mapping's.
func (d *deployment) calls(name string) []callrecord.Call {
	d.t.Helper()
	files, err := filepath.Glob(filepath.Join(d.callDir, name+"-*.jsonl"))
	if err != nil {
		d.t.Fatal(err)
	}
	var out []callrecord.Call
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			d.t.Fatal(err)
		}
		cs, err := callrecord.Read(f)
		f.Close()
		if err != nil {
			d.t.Fatalf("%s: %v", filepath.Base(p), err)
		}
		out = append(out, cs...)
	}
	return out
}

// runner is the event source mappings of the crawl functions (the slow lane's with the three
// when the template has it), with wrap around each function's invoker (nil: none), until every
// queue is empty.
func (d *deployment) runner(wrap func(name string, inv stackrun.Invoker) stackrun.Invoker) *localrun.Runner {
	d.t.Helper()
	r := &localrun.Runner{Queues: byQueue{looker: d.looker, pollers: map[string]*sqsqueue.Queue{}}, Log: e2etest.QuietLog()}
	for _, name := range d.crawlFunctions() {
		f := d.stack.Functions[name]
		var inv stackrun.Invoker = d.pools[name]
		if wrap != nil {
			inv = wrap(name, inv)
		}
		src, err := f.Source(inv, len(d.pools[name].Procs), d.stack.Physical.Region)
		if err != nil {
			d.t.Fatal(err)
		}
		r.Queues.(byQueue).pollers[f.Mapping.QueueURL] = d.pollers[name]
		r.Sources = append(r.Sources, src)
	}
	return r
}

// byQueue sends each queue's receives and deletes through the client of the mapping that polls
// it, and the runner's looks at the queues' depths through the harness's own.
type byQueue struct {
	looker  *sqsqueue.Queue
	pollers map[string]*sqsqueue.Queue
}

var _ localrun.Queues = byQueue{}

func (b byQueue) Receive(ctx context.Context, q string, max int, visibility, wait time.Duration) ([]queue.Message, error) {
	return b.pollers[q].Receive(ctx, q, max, visibility, wait)
}

func (b byQueue) Delete(ctx context.Context, q, receipt string) error {
	return b.pollers[q].Delete(ctx, q, receipt)
}

func (b byQueue) DeleteBatch(ctx context.Context, q string, receipts []string) error {
	return b.pollers[q].DeleteBatch(ctx, q, receipts)
}

func (b byQueue) ChangeVisibility(ctx context.Context, q, receipt string, timeout time.Duration) error {
	return b.pollers[q].ChangeVisibility(ctx, q, receipt, timeout)
}

func (b byQueue) Depth(ctx context.Context, q string) (int, int, error) {
	return b.looker.Depth(ctx, q)
}

// shortName is a fresh prefix for the deployment's resource names: short, so that the logical
// ids after it fit S3's 63 bytes.
func shortName(t *testing.T) string {
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	return "stk-" + hex.EncodeToString(r[:])
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
