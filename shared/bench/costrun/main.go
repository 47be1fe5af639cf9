package costrun

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/demo/jssite"
	"github.com/crawlstack/crawlstack/shared/demo/multisite"
	"github.com/crawlstack/crawlstack/shared/demo/realweb"
)

// Main is the crawlcost command: it parses args, runs the crawls they ask for and prints their
// reports on stdout. It returns the exit code: 0, 1 when a crawl failed, 2 for bad usage.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawlcost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var wf webFlags
	profiles := fs.String("profiles", strings.Join(Profiles, ","), "the crawls to measure, in this order: "+strings.Join(Profiles, ", "))
	jsonOut := fs.String("json", "", "also write the reports as JSON to this file")
	wf.register(fs)
	runURLs := fs.Int("run-urls", StackRunURLs, "URLs of one polite host a fetch message carries, through the slow lane (CRAWL_RUN_URLS, the stack's runUrls; 10 by default, as the stack; 0 or 1: no runs and no lane)")
	topUp := fs.Bool("top-up", true, "the slow lane's invocations take more messages from their queue while their runs keep them, as the stack's do (false: only the batch they are handed)")
	prices := fs.String("prices", "", "price overrides, e.g. sqs=0.40,ddb_write=0.625 (keys: see docs/cost.md)")
	history := fs.Int("history-items", 0, "items of other crawls (URLs, groups, parse marks, counter shards, crawl items) written into each "+
		"crawl's table before it, unmetered, as a table that other crawls have used holds them: at least 100,000 to see that a crawl costs the same (docs/state.md)")
	logFile := fs.String("log", "", "also write the functions' log lines, DEBUG and up, as JSON to this file (unmetered)")
	every := fs.Duration("progress", 15*time.Second, "how often to print progress on stderr (0: never)")
	fnFlag := fs.String("functions", "", "function settings over the stack's defaults, e.g. fetch.batchSize=10,fetch.batchWindowSeconds=0 "+
		"(keys: the stack's context keys without the function name: timeoutSeconds, memoryMB, maxConcurrency, batchSize, batchWindowSeconds, batchConcurrency)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := checkCounts(*runURLs, *history, wf.realHistory); err != nil {
		fmt.Fprintf(stderr, "crawlcost: %v\n", err)
		return 2
	}
	chosen, err := ParseProfiles(*profiles)
	if err != nil {
		fmt.Fprintf(stderr, "crawlcost: --profiles: %v\n", err)
		return 2
	}
	stack := StackFunctions()
	stack["render"] = StackRenderFunction()
	fns, err := OverrideFunctions(stack, *fnFlag)
	if err != nil {
		fmt.Fprintf(stderr, "crawlcost: --functions: %v\n", err)
		return 2
	}
	p, err := cost.DefaultPrices().Override(*prices)
	if err != nil {
		fmt.Fprintf(stderr, "crawlcost: --prices: %v\n", err)
		return 2
	}
	if !Emulated(os.Getenv) {
		fmt.Fprintln(stderr, "crawlcost: no AWS endpoint set: it crawls on the local emulators or LocalStack, never on AWS "+
			"itself. Run `make cost`, or set AWS_ENDPOINT_URL (or _SQS, _DYNAMODB and _S3).")
		return 2
	}
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "crawlcost: %v\n", err)
		return 1
	}
	base := pipeline.DefaultConfig()
	base.AllowNets = []string{"127.0.0.0/8"}
	base.WARCIndex = pipeline.IndexPerCrawl // the stack's default (infra's warcIndex): one index per crawl
	base.RunURLs = *runURLs
	logTo, closeLog, err := openLog(*logFile)
	if err != nil {
		fmt.Fprintf(stderr, "crawlcost: --log: %v\n", err)
		return 2
	}
	defer closeLog()
	const visibility = 2 * time.Minute
	runs := wf.runs(chosen, base, visibility)
	var reports []Report
	for i, o := range runs {
		o.Visibility, o.Progress, o.ProgressEvery, o.Functions, o.Log = visibility, stderr, *every, fns, logTo
		o.NoTopUp = !*topUp
		if o.Real == nil {
			o.HistoryItems = *history
		}
		r, err := Run(ctx, o, cfg)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				fmt.Fprintln(stderr, "crawlcost: interrupted")
			} else {
				fmt.Fprintf(stderr, "crawlcost: %s crawl: %v\n", o.Name, err)
			}
			return 1
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		r.Print(stdout, p)
		r.PrintProfile(stdout)
		reports = append(reports, r)
	}
	printSettings(stdout, p, fns, *runURLs, *topUp)
	if *jsonOut != "" {
		if err := writeJSONFile(*jsonOut, reports, p); err != nil {
			fmt.Fprintf(stderr, "crawlcost: --json: %v\n", err)
			return 1
		}
	}
	return 0
}

// webFlags are the flags that shape the crawls' webs.
type webFlags struct {
	realHosts, realPages, realSlow, realHistory   int
	realSeed                                      uint64
	pages, hosts, links, singlePages, renderPages int
	cross, singleRPS                              float64
	latency                                       time.Duration
}

// runs are the crawls of the chosen profiles, over base, with the webs f asks for.
func (f webFlags) runs(chosen []string, base pipeline.Config, visibility time.Duration) []Options {
	var runs []Options
	if slices.Contains(chosen, ProfileRealistic) {
		web := realweb.Defaults()
		web.Hosts, web.Pages, web.SlowHosts, web.Seed = f.realHosts, f.realPages, f.realSlow, f.realSeed
		web.Slow = base.FetchTimeout + 10*time.Second // past the fetch timeout: these hosts time out
		runs = append(runs, Realistic(base, web, f.realHistory, visibility))
	}
	if f.pages > 0 && slices.Contains(chosen, ProfileWide) {
		runs = append(runs, Options{Name: "wide", Pipeline: base, Web: multisite.Options{Hosts: f.hosts, Pages: f.pages,
			Links: f.links, CrossHost: f.cross, PageBytes: 20_000, Latency: f.latency}})
	}
	if f.singlePages > 0 && slices.Contains(chosen, ProfileSingle) {
		single := base
		single.HostRPS = f.singleRPS
		runs = append(runs, Options{Name: "single-host", Pipeline: single, Web: multisite.Options{Hosts: 1,
			Pages: f.singlePages, Links: f.links, PageBytes: 20_000, Latency: f.latency}})
	}
	if f.renderPages > 0 && slices.Contains(chosen, ProfileRender) {
		runs = append(runs, Options{Name: ProfileRender, Pipeline: base, Render: &jssite.Options{Pages: f.renderPages, Links: 3}})
	}
	return runs
}

// checkCounts checks the flags that count: -run-urls 0 to 60, the history items 0 or more.
func checkCounts(runURLs, history, realHistory int) error {
	if runURLs < 0 || runURLs > 60 {
		return fmt.Errorf("--run-urls %d: want 0 to 60", runURLs)
	}
	if history < 0 || realHistory < 0 {
		return fmt.Errorf("--history-items %d, --real-history-items %d: want 0 or more", history, realHistory)
	}
	return nil
}

// printSettings prints what every report was measured with: the prices, the functions' settings
// and the runs of URLs.
func printSettings(w io.Writer, p cost.Prices, fns map[string]Function, runURLs int, topUp bool) {
	fmt.Fprintf(w, "\nprices: us-east-1 list prices checked %s (docs/cost.md); Lambda at the stack's memory, arm64\n", p.SQSPerMillion.Checked)
	fmt.Fprintf(w, "functions: %s\n", describe(fns))
	if runURLs > 1 {
		fmt.Fprintf(w, "runs of URLs for polite hosts: up to %d a fetch message, through the slow lane (-run-urls; the stack's default is %d)\n", runURLs, StackRunURLs)
		if topUp {
			fmt.Fprintln(w, "the slow lane's invocations take more messages from their queue while their runs keep them, as the stack's do (-top-up)")
		} else {
			fmt.Fprintln(w, "the slow lane's invocations take only the batch they are handed (-top-up=false; the stack's take more while their runs keep them)")
		}
	} else {
		fmt.Fprintf(w, "runs of URLs for polite hosts: none (-run-urls %d; the stack's default is %d)\n", runURLs, StackRunURLs)
	}
}

// Emulated reports whether every service the crawl calls has an endpoint other than AWS's:
// AWS_ENDPOINT_URL, or the SQS, DynamoDB and S3 variables all set.
func Emulated(getenv func(string) string) bool {
	if getenv(awsconfig.EnvEndpoint) != "" {
		return true
	}
	for _, v := range []string{awsconfig.EnvEndpointSQS, awsconfig.EnvEndpointDynamoDB, awsconfig.EnvEndpointS3} {
		if getenv(v) == "" {
			return false
		}
	}
	return true
}

// describe says in one line what each function is given, in the stack's terms.
func describe(fns map[string]Function) string {
	var parts []string
	for _, name := range functionNames {
		f, ok := fns[name]
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d MB, %d batches at once of up to %d records (window %d s, %d records at once)",
			name, f.MemoryMB, f.MaxConcurrency, f.BatchSize, f.BatchWindowSeconds, f.BatchConcurrency))
	}
	return strings.Join(parts, "; ")
}

// OverrideFunctions returns fns with the settings of spec, a comma-separated list of
// function.key=value (fetch.batchSize=10), changed. The keys are the stack's per-function context
// keys without the function's name.
func OverrideFunctions(fns map[string]Function, spec string) (map[string]Function, error) {
	out := make(map[string]Function, len(fns))
	for k, v := range fns {
		out[k] = v
	}
	for _, item := range strings.Split(spec, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		key, value, ok := strings.Cut(item, "=")
		name, field, ok2 := strings.Cut(key, ".")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%q: want function.key=value, such as fetch.batchSize=10", item)
		}
		f, known := out[name]
		if !known {
			return nil, fmt.Errorf("%q: no function %q (schedule, fetch, fetchslow, parse or render)", item, name)
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not a whole number", item, value)
		}
		dst := map[string]*int{"timeoutSeconds": &f.TimeoutSeconds, "memoryMB": &f.MemoryMB, "maxConcurrency": &f.MaxConcurrency,
			"batchSize": &f.BatchSize, "batchWindowSeconds": &f.BatchWindowSeconds, "batchConcurrency": &f.BatchConcurrency}[field]
		if dst == nil {
			return nil, fmt.Errorf("%q: no setting %q", item, field)
		}
		*dst = n
		out[name] = f
	}
	return out, nil
}

// openLog opens the file of the functions' debug lines (-log), or returns nil for none.
func openLog(path string) (w io.Writer, closeIt func(), err error) {
	if path == "" {
		return nil, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// register defines the flags that shape the crawls' webs on fs.
func (wf *webFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&wf.realHosts, "real-hosts", 1000, "hosts of the realistic crawl, on 127.0.1.1 upwards (250 an address's third byte)")
	fs.IntVar(&wf.realPages, "real-pages", 2500, "about how many pages the realistic crawl's web has, over its hosts by Zipf's law "+
		"(its largest host takes 13% of them, at one page a second: 2,500 pages take some 6 minutes)")
	fs.IntVar(&wf.realSlow, "real-slow-hosts", 5, "hosts of the realistic crawl that answer only after the fetch timeout")
	fs.IntVar(&wf.realHistory, "real-history-items", 100_000, "items of other crawls in the realistic crawl's table before it (as -history-items)")
	fs.Uint64Var(&wf.realSeed, "real-seed", 1, "the seed the realistic crawl's web is drawn from")
	fs.IntVar(&wf.pages, "pages", 10_000, "pages of the wide crawl (0: skip it)")
	fs.IntVar(&wf.hosts, "hosts", 100, "hosts of the wide crawl, on 127.0.1.1 upwards")
	fs.IntVar(&wf.links, "links", 20, "links per page")
	fs.Float64Var(&wf.cross, "cross-host", 0.2, "share of a page's links that point at another host")
	fs.DurationVar(&wf.latency, "latency", 200*time.Millisecond, "how long each answer of the web takes")
	fs.IntVar(&wf.singlePages, "single-pages", 300, "pages of the single-host crawl (0: skip it)")
	fs.Float64Var(&wf.singleRPS, "single-rps", 1, "the single-host crawl's request rate (the stack's default is 1)")
	fs.IntVar(&wf.renderPages, "render-pages", 20, "pages of the render crawl, each rendered in Chromium (0: skip it)")
}
