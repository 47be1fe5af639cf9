package pipeline

import (
	"fmt"
	"maps"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
)

// RetryPolicy is the stack's retry policy: c.MaxTries and c.RetryWait for every class, but for
// those c.RetryClasses sets, and for a timeout, unless it sets that, DefaultTimeoutTries (never
// more than c.MaxTries). It is the policy of a crawl whose spec has no retry section.
func (c Config) RetryPolicy() retry.Table {
	classes := c.RetryClasses
	if _, ok := classes[errclass.Timeout]; !ok {
		classes = maps.Clone(classes)
		if classes == nil {
			classes = map[errclass.Class]retry.Curve{}
		}
		classes[errclass.Timeout] = retry.Curve{Tries: min(DefaultTimeoutTries, c.MaxTries)}
	}
	return retry.Table{Default: retry.Curve{Tries: c.MaxTries, Wait: c.RetryWait}, Classes: classes}
}

// DefaultTimeoutTries is how many requests a URL whose requests time out takes, unless the stack
// gives the timeout class its own tries: a second chance for a stall, not three more fetch
// timeouts, each of which holds a fetch invocation for the whole timeout (docs/cost.md).
const DefaultTimeoutTries = 2

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
// host and rate, and its include patterns when c has its own.
func (c Config) SpecBounds() crawlspec.Bounds {
	b := crawlspec.Bounds{MaxPages: c.MaxPages, MaxPagesPerHost: c.MaxPagesPerHost, HostRPS: c.HostRPS, Include: len(c.Include) > 0,
		UserAgent: c.UserAgent, Fingerprint: c.Fingerprint, LocalSecrets: c.LocalSecrets, Secrets: c.SecretHeaders,
		Proxies: len(c.Proxies) > 0 || c.ProxiesSecret != "", MaxTries: c.RetryPolicy().MostTries()}
	if c.MaxDepth >= 0 {
		b.MaxDepth = &c.MaxDepth
	}
	return b
}
