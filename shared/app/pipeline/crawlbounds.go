package pipeline

import (
	"fmt"
	"maps"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
)

// RetryPolicy is the stack's retry policy: c.MaxTries and c.RetryWait for every class, but for
// those c.RetryClasses sets, and for a timeout and a robots.txt that is down, unless it sets
// those, DefaultTimeoutTries and DefaultRobotsUnavailableTries (never more than c.MaxTries). It is
// the policy of a crawl whose spec has no retry section.
func (c Config) RetryPolicy() retry.Table {
	classes := maps.Clone(c.RetryClasses) // the stack's own stays as it was set
	if classes == nil {
		classes = map[errclass.Class]retry.Curve{}
	}
	for class, tries := range defaultTries {
		if _, ok := classes[class]; !ok {
			classes[class] = retry.Curve{Tries: min(tries, c.MaxTries)}
		}
	}
	return retry.Table{Default: retry.Curve{Tries: c.MaxTries, Wait: c.RetryWait}, Classes: classes}
}

// DefaultTimeoutTries is how many requests a URL whose requests time out takes, unless the stack
// gives the timeout class its own tries: a second chance for a stall, not three more fetch
// timeouts, each of which holds a fetch invocation for the whole timeout (docs/cost.md).
const DefaultTimeoutTries = 2

// DefaultRobotsUnavailableTries is how many times a URL whose host's robots.txt is down (5xx,
// 429, no answer) asks for it, unless the stack gives robots_unavailable its own tries. Each try
// after the first waits out the robots cache's error TTL (robots.ErrorTTL, 5 minutes), so that it
// asks the host again: 2 tries end such a URL, skipped, 5 minutes after its first, where 4 kept
// it (and its crawl, with the crawl's pollers and drain checks) 15 minutes (docs/cost.md).
const DefaultRobotsUnavailableTries = 2

// defaultTries are the classes whose tries the stack's policy bounds below c.MaxTries by default.
var defaultTries = map[errclass.Class]int{
	errclass.Timeout:           DefaultTimeoutTries,
	errclass.RobotsUnavailable: DefaultRobotsUnavailableTries,
}

// checkRetryClasses checks the classes and curves of c.RetryClasses.
func (c Config) checkRetryClasses() []error {
	var errs []error
	for class, cv := range c.RetryClasses {
		if _, err := retry.ParseClass(string(class)); err != nil {
			errs = append(errs, fmt.Errorf("retry classes: %w", err))
		} else if err := cv.Check(); err != nil {
			errs = append(errs, fmt.Errorf("retry classes: %s: %w", class, err))
		}
	}
	return errs
}

// SpecBounds are the ceilings c puts on what a crawl spec may set: its depth, pages, pages per
// host, rate and concurrency, and its include patterns when c has its own.
func (c Config) SpecBounds() crawlspec.Bounds {
	b := crawlspec.Bounds{MaxPages: c.MaxPages, MaxPagesPerHost: c.MaxPagesPerHost, HostRPS: c.HostRPS, HostConcurrency: c.HostConcurrency,
		Include:   len(c.Include) > 0,
		UserAgent: c.UserAgent, Fingerprint: c.Fingerprint, LocalSecrets: c.LocalSecrets, Secrets: c.SecretHeaders,
		Proxies: len(c.Proxies) > 0 || c.ProxiesSecret != "", MaxTries: c.RetryPolicy().MostTries()}
	if c.MaxDepth >= 0 {
		b.MaxDepth = &c.MaxDepth
	}
	return b
}

// checkRetries checks the retries of failing URLs, the hosts' circuits, the receives and the
// place of the WARC index.
func (c Config) checkRetries() []error {
	var errs []error
	if c.MaxTries < 1 || c.MaxTries > 20 {
		errs = append(errs, fmt.Errorf("max tries %d: want 1 to 20 requests of a failing URL", c.MaxTries))
	}
	if c.RetryWait <= 0 || c.RetryWait > time.Minute {
		errs = append(errs, fmt.Errorf("retry wait %v: want more than 0 and at most a minute", c.RetryWait))
	}
	errs = append(errs, c.checkRetryClasses()...)
	if c.WARCIndex != IndexEachFile && c.WARCIndex != IndexPerCrawl {
		errs = append(errs, fmt.Errorf("warc index %q: want %s (a CDXJ index beside each WARC file) or %s (crawl index builds one per crawl)",
			c.WARCIndex, IndexEachFile, IndexPerCrawl))
	}
	if c.CircuitFailures < -1 || c.CircuitFailures > 1000 {
		errs = append(errs, fmt.Errorf("circuit failures %d: want 1 to 1000 failures in a row, 0 for the default (%d) or -1 for no circuit",
			c.CircuitFailures, crawlstate.DefaultCircuitFailures))
	}
	if c.CircuitProbe < 0 || c.CircuitProbe > time.Hour {
		errs = append(errs, fmt.Errorf("circuit probe %v: want 0 (the default, %v) up to an hour", c.CircuitProbe, crawlstate.DefaultCircuitProbe))
	}
	if c.MaxReceive < 1 {
		errs = append(errs, fmt.Errorf("max receive %d: must be at least 1 (the queues use 5 or more)", c.MaxReceive))
	}
	return errs
}
