package costrun

// The crawls that `make cost` measures (its profiles), the webs they crawl, and what the
// realistic one adds: a web of many hosts of Zipf sizes with real-looking pages
// (shared/demo/realweb), the drain checks of the stack, and a table with other crawls' history.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/demo/jssite"
	"github.com/crawlstack/crawlstack/shared/demo/multisite"
	"github.com/crawlstack/crawlstack/shared/demo/realweb"
)

// The profiles, in the order they run.
const (
	ProfileRealistic = "realistic"
	ProfileWide      = "wide"
	ProfileSingle    = "single"
	ProfileRender    = "render"
)

// Profiles are the names -profiles takes, in the order they run.
var Profiles = []string{ProfileRealistic, ProfileWide, ProfileSingle, ProfileRender}

// ParseProfiles reads a comma-separated list of profile names: the profiles to run, in the order
// of Profiles, each once.
func ParseProfiles(s string) ([]string, error) {
	want := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(Profiles, name) {
			return nil, fmt.Errorf("no profile %q (want some of %s)", name, strings.Join(Profiles, ","))
		}
		want[name] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("no profile in %q (want some of %s)", s, strings.Join(Profiles, ","))
	}
	var out []string
	for _, name := range Profiles {
		if want[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

// The stack's drain checks (infra/crawlstack finishEnv): one a crawl every minute.
const stackFinishEvery = 60 * time.Second

// AWSPollers is how many pollers Lambda runs for an SQS event source mapping whose maximum
// concurrency is set, as the stack's are: 5, however few batches they may hand over at once. The
// local runner receives with one poller per batch in flight (localrun.Source.Pollers, the
// function's maximum concurrency), so the receives that the others would make are not in its
// figures: Options.Pollers carries the number to the report, for the meter's model of the pollers.
const AWSPollers = 5

// Realistic returns the options of the realistic crawl of web (realweb's defaults when zero): the
// stack's configuration base, its drain checks on (one a minute, as the stack sends them), a table
// holding history items of other crawls first, and the pollers as many as AWS runs.
func Realistic(base pipeline.Config, web realweb.Options, history int, visibility time.Duration) Options {
	pc := base
	pc.FinishEvery = stackFinishEvery
	// The stack's quiet time is the schedule queue's visibility timeout and a check's interval.
	pc.FinishQuiet = visibility + stackFinishEvery
	return Options{Name: ProfileRealistic, Real: &web, Pipeline: pc, HistoryItems: history, Pollers: AWSPollers}
}

// site is the web a measured crawl crawls: its roots (the seeds), its hosts, its count of the pages
// it served, and, for a web with hosts outside it, the connections that reached those.
type site struct {
	roots    []string
	hosts    int
	describe string
	fetched  func() (pages, twice int)
	// twiceList, when set, names the pages served more than once (at most n).
	twiceList func(n int) []string
	unscoped  func() int64
	// largest, when set, is when the largest host's pages were requested.
	largest func() realweb.Span
	close   func()
}

// startSite serves the web of o: o.Render or o.Real when set, else o.Web.
func startSite(o Options) (*site, error) {
	if o.Render != nil {
		return jsSite(*o.Render), nil
	}
	if o.Real != nil {
		w, err := realweb.Start(*o.Real)
		if err != nil {
			return nil, err
		}
		ro := w.Options()
		sizes := w.Sizes()
		return &site{roots: w.Roots, hosts: len(w.Roots), fetched: w.Fetched, twiceList: w.Twice, unscoped: w.Unscoped, close: w.Close,
			largest: func() realweb.Span { return w.SpanOf(0) },
			describe: fmt.Sprintf("%d pages on %d hosts of Zipf sizes (exponent %.2g: the largest %d pages, %.0f%%; %d hosts of one page), "+
				"HTML of %d to %d KB (median %d), %d links a page (%.0f%% off-site, %.0f%% of those out of scope), "+
				"answers in a lognormal time of median %v and 99th percentile %v, %d hosts answering after %v",
				w.Pages(), len(sizes), ro.Zipf, sizes[0], 100*float64(sizes[0])/float64(w.Pages()), countOf(sizes, 1),
				ro.MinBytes/1000, ro.MaxBytes/1000, ro.MedianBytes/1000, ro.Links, 100*ro.OffSite, 100*ro.OutOfScope,
				ro.Median, ro.P99, ro.SlowHosts, ro.Slow)}, nil
	}
	w, err := multisite.Start(o.Web)
	if err != nil {
		return nil, err
	}
	return &site{roots: w.Roots, hosts: o.Web.Hosts, fetched: w.Fetched, close: w.Close,
		describe: fmt.Sprintf("%d pages on %d hosts of equal size, %d B pages, %d links a page (%.0f%% to other hosts), %v an answer",
			o.Web.Pages, o.Web.Hosts, o.Web.PageBytes, o.Web.Links, 100*o.Web.CrossHost, o.Web.Latency)}, nil
}

func countOf(s []int, v int) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// endEvents is the drain checks' publisher (Ports.Events): it keeps the crawl's end as announced,
// where the stack puts it on EventBridge (one event a crawl: not worth a line of the bill).
type endEvents struct {
	mu     sync.Mutex
	events []finish.Event
}

func (e *endEvents) Publish(_ context.Context, ev finish.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, ev)
	return nil
}

// ends returns the events announced so far.
func (e *endEvents) ends() []finish.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// jsSite serves a site whose links its pages' scripts build (the render profile).
func jsSite(o jssite.Options) *site {
	w := jssite.New(o)
	return &site{roots: []string{w.URL() + "/"}, hosts: 1, close: w.Close,
		describe: fmt.Sprintf("%d pages on one host whose links and text only their scripts build (after a fetch of JSON), each page rendered in Chromium", w.Pages()),
		fetched: func() (pages, twice int) {
			for i := range w.Pages() {
				switch n := w.Hits(jssite.Path(i)); {
				case n > 1:
					pages, twice = pages+1, twice+1
				case n == 1:
					pages++
				}
			}
			return pages, twice
		}}
}

// renderSpec is the spec of the render profile's crawl: the site's root, every page rendered.
func renderSpec(roots []string) string {
	return "version: 1\nseeds: [" + strings.Join(roots, ", ") + "]\nrender:\n  patterns: ['.']\n"
}

// functionNames are the stack's functions, in the order the reports list them: render is there
// with render=true only.
var functionNames = []string{"schedule", "fetch", "fetchslow", "parse", "render"}

// functions are the functions of the crawl: the four, and render for a render profile.
func (c *costRun) functions() []string {
	if c.o.Render != nil {
		return functionNames
	}
	return functionNames[:4]
}
