package costrun

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/demo/jssite"
	"github.com/crawlstack/crawlstack/shared/demo/multisite"
	"github.com/crawlstack/crawlstack/shared/demo/realweb"
	"github.com/crawlstack/crawlstack/shared/local/localrun"
	"github.com/crawlstack/crawlstack/shared/port/queue"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
)

func TestEmulatedWantsEveryServiceOverridden(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"}, true},
		{map[string]string{"AWS_ENDPOINT_URL_SQS": "x", "AWS_ENDPOINT_URL_DYNAMODB": "y"}, false},
		{map[string]string{"AWS_ENDPOINT_URL_SQS": "x", "AWS_ENDPOINT_URL_DYNAMODB": "y", "AWS_ENDPOINT_URL_S3": "z"}, true},
	} {
		if got := Emulated(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("Emulated(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

func TestHottestSplitsPerHostItemsFromTheRest(t *testing.T) {
	k := &keyWrites{}
	slot, budget := table.Key{Part: "p#3", Sort: "a.test"}, table.Key{Part: "c#c1#5", Sort: "b#a.test"}
	crawlItem := table.Key{Part: "k#2", Sort: "c1"}
	for key, n := range map[table.Key]int{slot: 7, budget: 9, crawlItem: 4,
		{Part: "c#c1#0", Sort: "u#x"}: 2, {Part: "c#c1#1", Sort: "r#m"}: 3} {
		for i := range n {
			fn := "schedule"
			if i%2 == 1 {
				fn = "fetch"
			}
			k.count(context.Background(), fn, key)
		}
	}
	if got, want := k.kindByFunction("slot"), map[string]int64{"schedule": 4, "fetch": 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("slot writes by function = %v, want %v", got, want)
	}
	host, hostN, other, otherN := k.hottest()
	if host != budget.String() || hostN != 9 || other != crawlItem.String() || otherN != 4 {
		t.Errorf("hottest = %s %d, %s %d; want %s 9, %s 4", host, hostN, other, otherN, budget, crawlItem)
	}
	if key, n := k.hottestOf("crawl"); key != crawlItem.String() || n != 4 {
		t.Errorf("hottestOf(crawl) = %s %d, want %s 4", key, n, crawlItem)
	}
	if key, n := k.hottestOf("other"); key != "" || n != 0 {
		t.Errorf("hottestOf(other) = %q %d, want none", key, n)
	}
	want := map[string]int64{"slot": 7, "host budget": 9, "crawl": 4, "url": 2, "groups": 3}
	if got := k.byKind(); !reflect.DeepEqual(got, want) {
		t.Errorf("byKind = %v, want %v", got, want)
	}
}

// TestPrintGivesDollarsPerMillionPages checks the table against figures worked out by hand.
func TestPrintGivesDollarsPerMillionPages(t *testing.T) {
	p := cost.DefaultPrices()
	p.SQSPerMillion.USD, p.DynamoDBWritePerMillion.USD, p.DynamoDBReadPerMillion.USD = 0.40, 0.625, 0.125
	p.S3ClassAPerThousand.USD, p.S3ClassBPerThousand.USD = 0.005, 0.0004
	p.LambdaRequestsPerMillion.USD, p.LambdaGBSecond.USD, p.LogsPerGB.USD = 0.20, 0.0000133334, 0.50
	r := Report{Name: "wide", Pages: 1000, Hosts: 10, EvenHosts: true, Units: cost.Units{
		SQSRequests: 5000, DynamoDBWriteUnits: 14000, DynamoDBReadUnits: 2000, S3ClassA: 100, S3ClassB: 1000,
		LambdaRequests: 300, LambdaGBSeconds: 150, LogBytes: 1 << 20, MetricSeriesHours: cost.MetricSeriesHours(8, 61*time.Minute)},
		HotHost: "p#a", HotHostWrites: 200, HotOther: "c#c1", HotOtherWrites: 50, HotCrawl: "c#c1#7", HotCrawlWrites: 4,
		Writes:     map[string]int64{"url": 4500, "slot": 2250, "crawl": 50},
		SlotWrites: map[string]int64{"schedule": 2000, "fetch": 250},
		Batches:    map[string]Batches{"fetch": {Invocations: 250, Records: 2000, GBSeconds: 120}, "parse": {Invocations: 20, Records: 1000, GBSeconds: 30}},
		SQSCalls:   map[string]int64{"DeleteMessageBatch fetch": 100, "ReceiveMessage fetch": 1500},
		Ledger:     cost.Units{DynamoDBWriteUnits: 1600},
		Crawled:    cost.Units{DynamoDBWriteUnits: 1700}, Elapsed: 61 * time.Minute}
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	r.Largest = realweb.Span{First: t0, Last: t0.Add(200 * time.Second), Requests: 101}
	var b bytes.Buffer
	r.Print(&b, p)
	out := b.String()
	// Per million pages: SQS 5 requests/page x $0.40/M = $2.00; DynamoDB 14 x 0.625 + 2 x 0.125 =
	// $9.00; S3 0.1 x $5 + 1 x $0.40 = $0.90; Lambda 0.3 x 0.20 + 0.15 GB-s x $13.3334 = $2.06;
	// logs 1 MiB / 1000 pages = 1048.576 bytes/page, x 1e6 / 2^30 x $0.50 = $0.49; 8 metric series
	// for the 61 minutes that 1,000 pages took, 8.133 series-hours x $0.30 / 730 = $0.00334, $3.34
	// per million pages; total $17.79.
	for _, want := range []string{"SQS  5.00 requests  2.00", "DynamoDB  14.00 WRU, 2.00 RRU  9.00",
		"S3  0.100 PUT/LIST, 1.000 GET  0.90", "Lambda  0.300 requests, 0.1500 GB-s  2.06",
		"Logs  1049 bytes  0.49", "CloudWatch metrics  0.008133 series-hours  3.34", "total  17.79", "p#a, 200.0 writes per 1,000 pages",
		"2.00 per page of its host", "a host of 500 pages/s",
		"grow with the crawl's rate): c#c1#7, 4.0 writes per 1,000 pages (a crawl of 250000 pages/s at most)",
		"c#c1, 50.0 writes per 1,000 pages", "a crawl of 20000 pages/s at most",
		"table writes per page by item: url 4.50, slot 2.25, crawl 0.05",
		// 101 requests over 200 s: 100 gaps, 0.50 a second.
		"the largest host: 101 pages requested in 3m20s from its first to its last, 0.50 a second",
		"politeness slot writes per page by function: schedule 2.00, fetch 0.25",
		"invocations per page by function: fetch 0.250 (8.0 records each, 0.1200 GB-s a page), parse 0.020 (50.0 records each, 0.0300 GB-s a page)",
		"SQS requests per page by call and queue: ReceiveMessage fetch 1.50, DeleteMessageBatch fetch 0.10",
		// The ledger: 1,600 WRU, $0.001, against the meter's 1,700: 1 - 1600/1700 = 5.9% under.
		"the crawl's own ledger (its record, which the budget reads): $1.00 per million pages; the meter, from the crawl's first message to its end: $1.06 (the ledger -5.9%",
		// 1,000 pages in 61 minutes: 984 an hour, a million pages in 1,016.7 hours, 8 series each.
		"at this crawl's 984 pages an hour a million pages take 1016.7 hours, 8133 series-hours"} {
		if !strings.Contains(squeeze(out), want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

// TestPrintNamesNoHostRateForAWebOfUnevenHosts: the realistic web's hosts are of Zipf sizes, so
// the hottest host item's writes are not divided by an even share of the pages (which said 40
// writes a page of a host that took 0.5).
func TestPrintNamesNoHostRateForAWebOfUnevenHosts(t *testing.T) {
	r := Report{Name: "realistic", Pages: 1000, Hosts: 500, HotHost: "p#big", HotHostWrites: 60}
	var b bytes.Buffer
	r.Print(&b, cost.DefaultPrices())
	out := squeeze(b.String())
	if strings.Contains(out, "per page of its host") {
		t.Errorf("the report gives a per-page rate of the hottest host of an uneven web:\n%s", out)
	}
	if want := "hottest per-host item: p#big, 60 writes, 60.0 per 1,000 pages of the crawl"; !strings.Contains(out, want) {
		t.Errorf("the report lacks %q:\n%s", want, out)
	}
}

// squeeze turns every run of two or more spaces into two, so that the test does not pin column
// widths.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(wide.ReplaceAllString(l, "  "))
	}
	return strings.Join(lines, "\n")
}

var wide = regexp.MustCompile(`  +`)

// TestIntegrationCostRunMetersAWholeCrawl crawls a small web of three hosts on the emulators:
// every page is fetched once, and every billed item is metered.
func TestIntegrationCostRunMetersAWholeCrawl(t *testing.T) {
	cfg := awstest.Config(t)
	for _, s := range []string{"SQS", "DYNAMODB", "S3"} {
		awstest.RequireService(t, s)
	}
	pc := pipeline.DefaultConfig()
	pc.AllowNets = []string{"127.0.0.0/8"}
	pc.HostRPS = 0
	pc.WARCIndex = pipeline.IndexPerCrawl // as the stack stores them: the index built from the files after
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var debug bytes.Buffer // written by one slog handler, which locks its writes
	r, err := Run(ctx, Options{Name: "small", Pipeline: pc, Visibility: 30 * time.Second, Log: &debug,
		Web: multisite.Options{Hosts: 3, Pages: 60, Links: 5, CrossHost: 0.2, PageBytes: 2000}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Options.Log has the functions' lines down to DEBUG (schedule's admissions), and the INFO
	// lines the stack writes (the crawl's start), which the meter counts with the EMF lines.
	for _, want := range []string{`"level":"DEBUG","msg":"admitted","fn":"schedule"`, `"level":"INFO","msg":"crawl started"`} {
		if !bytes.Contains(debug.Bytes(), []byte(want)) {
			t.Errorf("the debug log has no %s: %.300s", want, debug.String())
		}
	}
	if r.Pages != 60 || r.Twice != 0 {
		t.Errorf("%d pages fetched, %d twice; want 60 and 0", r.Pages, r.Twice)
	}
	if r.IndexLines != 60 || r.IndexFiles == 0 {
		t.Errorf("the crawl's index has %d lines from %d files, want a line for each of the 60 pages", r.IndexLines, r.IndexFiles)
	}
	u := r.Units
	if u.SQSRequests == 0 || u.DynamoDBWriteUnits == 0 || u.DynamoDBReadUnits == 0 || u.S3ClassA == 0 ||
		u.S3ClassB == 0 || u.LambdaRequests == 0 || u.LambdaGBSeconds == 0 || u.LogBytes == 0 {
		t.Errorf("units = %+v: want every item metered", u)
	}
	if u.DynamoDBUnmetered != 0 {
		t.Errorf("%d DynamoDB answers carried no consumed capacity", u.DynamoDBUnmetered)
	}
	// Each admitted URL's item is written once at least (its admission), and the group of a fetch
	// message, which holds at most message.MaxFetchURLs URLs, twice (the claim and the outcomes): 1
	// write unit a page and two for every MaxFetchURLs pages is a floor no metering can go under.
	if per, floor := u.DynamoDBWriteUnits/60, 1+2/float64(message.MaxFetchURLs); per < floor {
		t.Errorf("%.2f write units per page, want at least %.2f", per, floor)
	}
	if r.HotOther == "" || r.HotOtherWrites == 0 {
		t.Errorf("no hot item found: %+v", r)
	}
	// Every page's URL went out once at least, in messages of up to MaxFetchURLs URLs of one group.
	if r.FirstURLs < 60 || r.FirstMessages*message.MaxFetchURLs < r.FirstURLs || r.Groups == 0 || r.Groups > r.FirstMessages {
		t.Errorf("first sends: %d messages of %d URLs in %d groups, want the 60 pages' URLs in messages of at most %d, groups no more than messages",
			r.FirstMessages, r.FirstURLs, r.Groups, message.MaxFetchURLs)
	}
	// The crawl's ledger, which its budget reads, books what the meter counts from the crawl's first
	// message to its end, the pollers' receives and deletes of each batch included: within 5%.
	meterUSD, ledgerUSD := cost.DefaultPrices().Cost(r.Crawled).Total, cost.DefaultPrices().Cost(r.Ledger).Total
	if meterUSD <= 0 || math.Abs(ledgerUSD-meterUSD) > 0.05*meterUSD {
		t.Errorf("the ledger says $%.6f, the meter $%.6f: want within 5%% (ledger %+v, meter %+v)", ledgerUSD, meterUSD, r.Ledger, r.Crawled)
	}
	var b bytes.Buffer
	r.Print(&b, cost.DefaultPrices())
	t.Logf("\n%s", b.String())
}

// TestStackFunctionsMatchTheStack holds StackFunctions against the copy of the stack's defaults
// that infra/crawlstack's tests hold DefaultFunctions against (infra is a module of its own, so
// neither can import the other): make cost must meter the stack's settings.
// TestIntegrationTheRenderProfileMetersTheRenderFunction: the render profile crawls a site whose
// links only its scripts build, through the render function: every page is reached (without the
// browser only the root would be), none twice, and the render function's invocations are metered.
func TestIntegrationTheRenderProfileMetersTheRenderFunction(t *testing.T) {
	cfg := awstest.Config(t)
	for _, s := range []string{"SQS", "DYNAMODB", "S3"} {
		awstest.RequireService(t, s)
	}
	pc := pipeline.DefaultConfig()
	pc.AllowNets = []string{"127.0.0.0/8"}
	pc.HostRPS = 0
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := Run(ctx, Options{Name: ProfileRender, Pipeline: pc, Visibility: 30 * time.Second, Render: &jssite.Options{Pages: 6, Links: 2}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pages != 6 || r.Twice != 0 {
		t.Errorf("%d pages fetched, %d twice; want the site's 6 (its links exist only once rendered), none twice", r.Pages, r.Twice)
	}
	if b := r.Batches["render"]; b.Invocations == 0 || b.Records == 0 {
		t.Errorf("render invocations %+v; want the render function's batches metered", b)
	}
}

func TestStackFunctionsMatchTheStack(t *testing.T) {
	const path = "../../../infra/crawlstack/testdata/function-defaults.json"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	delete(byName, "_comment")
	want := map[string]Function{}
	for name, v := range byName {
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		var f Function
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("%s, %s: %v", path, name, err)
		}
		want[name] = f
	}
	if got := StackFunctions(); !reflect.DeepEqual(got, want) {
		t.Errorf("StackFunctions = %+v\nthe stack's defaults (%s) = %+v\nchange them together", got, path, want)
	}
}

// TestStackRunURLsMatchTheStack: `make cost` meters the stack's runUrls by default, held against
// the copy the stack's tests hold crawlstack.DefaultRunURLs against.
func TestStackRunURLsMatchTheStack(t *testing.T) {
	const path = "../../../infra/crawlstack/testdata/stack-defaults.json"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Comment string `json:"_comment"`
		RunURLs *int   `json:"runUrls"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil || want.RunURLs == nil {
		t.Fatalf("%s: %v, runUrls %v", path, err, want.RunURLs)
	}
	if StackRunURLs != *want.RunURLs {
		t.Errorf("StackRunURLs = %d, the stack's runUrls (%s) = %d: change them together", StackRunURLs, path, *want.RunURLs)
	}
}

func TestOverrideFunctions(t *testing.T) {
	base := StackFunctions()
	got, err := OverrideFunctions(base, "fetch.batchSize=10, fetch.batchWindowSeconds=0,parse.memoryMB=1024")
	if err != nil {
		t.Fatal(err)
	}
	want := StackFunctions()
	f, p := want["fetch"], want["parse"]
	f.BatchSize, f.BatchWindowSeconds, p.MemoryMB = 10, 0, 1024
	want["fetch"], want["parse"] = f, p
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OverrideFunctions = %+v, want %+v", got, want)
	}
	if !reflect.DeepEqual(base, StackFunctions()) {
		t.Error("OverrideFunctions changed its argument")
	}
	for _, bad := range []string{"fetch.batchSize", "fetch=10", "crawl.batchSize=1", "fetch.size=1", "fetch.batchSize=ten"} {
		if _, err := OverrideFunctions(base, bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// instantQueues answers every receive at once: with the messages it holds for the queue, or empty.
type instantQueues struct {
	localrun.Queues // the rest is never called
	msgs            map[string][]queue.Message
}

func (q instantQueues) Receive(_ context.Context, name string, _ int, _, _ time.Duration) ([]queue.Message, error) {
	return q.msgs[name], nil
}

// An empty answer to a long poll that came before its wait was over is the emulator's, and is
// taken out of the bill; an answer with messages, or to a short poll, is not.
func TestEarlyEmptyReceivesAreNotBilled(t *testing.T) {
	e := &earlyEmpty{}
	q := e.wrap(instantQueues{msgs: map[string][]queue.Message{"http://q/crawlcost-x-parse": {{ID: "m"}}}})
	ctx := context.Background()
	for range 3 {
		if _, err := q.Receive(ctx, "http://q/crawlcost-x-fetch", 10, time.Minute, 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Receive(ctx, "http://q/crawlcost-x-fetch", 10, time.Minute, 0); err != nil { // a short poll
		t.Fatal(err)
	}
	if _, err := q.Receive(ctx, "http://q/crawlcost-x-parse", 10, time.Minute, 20*time.Second); err != nil { // got a message
		t.Fatal(err)
	}
	u := cost.Units{SQSRequests: 10}
	calls := map[string]int64{"ReceiveMessage fetch": 4, "ReceiveMessage parse": 1}
	if n := e.takeFrom(&u, calls); n != 3 || u.SQSRequests != 7 || calls["ReceiveMessage fetch"] != 1 || calls["ReceiveMessage parse"] != 1 {
		t.Errorf("took %d: units %d, calls %v; want 3 early empty receives of fetch taken out", n, u.SQSRequests, calls)
	}
}

// TestJSONCarriesTheLargestHostsSpan: the JSON report says how long the largest host's pages
// took and how many there were, read back by encoding/json; a web that cannot tell leaves both out.
func TestJSONCarriesTheLargestHostsSpan(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		span  realweb.Span
		want  map[string]float64
		label string
	}{
		{realweb.Span{First: t0, Last: t0.Add(200 * time.Second), Requests: 101},
			map[string]float64{"largestHostSeconds": 200, "largestHostPages": 101}, "realistic"},
		{realweb.Span{}, map[string]float64{}, "a web of equal hosts"},
	} {
		r := Report{Name: tc.label, Pages: 1000, Largest: tc.span}
		j, err := r.JSON(cost.DefaultPrices())
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"largestHostSeconds", "largestHostPages"} {
			v, ok := got[k]
			want, wanted := tc.want[k]
			if ok != wanted || (ok && v.(float64) != want) {
				t.Errorf("%s: %s = %v (present %v), want %v (present %v)", tc.label, k, v, ok, want, wanted)
			}
		}
	}
}
