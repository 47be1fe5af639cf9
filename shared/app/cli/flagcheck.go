package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
)

// checkRunFlags checks every flag of crawl run before any work (no file is read, nothing is
// created), and says what is wrong with each bad one in a sentence that names it. The pipeline's
// own Validate, which names its settings as the Lambda functions' environment does, runs after
// as a backstop.
func checkRunFlags(o RunOptions) error {
	var errs flagErrors
	checkCrawlFlags(o, errs.bad)
	checkFetchFlags(o, errs.bad)
	checkRetryFlags(o, errs.bad)
	return errors.Join(errs...)
}

// flagErrors are what is wrong with the bad flags, in the order they were checked.
type flagErrors []error

// flagProblem says what is wrong with one flag's value.
type flagProblem func(flag string, value any, format string, args ...any)

// bad adds what is wrong with one flag's value, in a sentence that names the flag.
func (e *flagErrors) bad(flag string, value any, format string, args ...any) {
	*e = append(*e, fmt.Errorf("--%s %v: %s", flag, value, fmt.Sprintf(format, args...)))
}

// checkCrawlFlags checks the flags that say how much of the web a crawl takes: its concurrency,
// scope, limits and patterns.
func checkCrawlFlags(o RunOptions, bad flagProblem) {
	if o.Concurrency < 1 {
		bad("concurrency", o.Concurrency, "must be at least 1")
	}
	if o.HostConcurrency < 0 {
		bad("host-concurrency", o.HostConcurrency, "must be 0 (no bound) or more")
	}
	if o.HostRPS < 0 {
		bad("host-rps", o.HostRPS, "must be 0 (no limit) or more")
	}
	if _, err := scope.ParseMode(o.Scope); err != nil {
		bad("scope", o.Scope, "want host, domain or any")
	}
	if o.MaxDepth < -1 {
		bad("max-depth", o.MaxDepth, "want 0 (the seeds only) or more, or -1 (no limit)")
	}
	if o.MaxPages < 0 {
		bad("max-pages", o.MaxPages, "must be 0 (no limit) or more")
	}
	if o.MaxPagesPerHost < 0 {
		bad("max-pages-per-host", o.MaxPagesPerHost, "must be 0 (no limit) or more")
	}
	if strings.TrimSpace(o.UserAgent) == "" {
		bad("user-agent", `""`, "must not be empty: crawlers say who they are")
	}
	for _, n := range o.AllowNet {
		if _, err := netguard.ParseCIDRs([]string{n}); err != nil {
			bad("allow-net", n, "not a CIDR (10.0.0.0/8) or an IP")
		}
	}
	for name, list := range map[string][]string{"include": o.Include, "exclude": o.Exclude} {
		for _, re := range list {
			if _, err := scope.ParsePatterns([]string{re}); err != nil {
				bad(name, fmt.Sprintf("%q", re), "not a regular expression (%v)", errors.Unwrap(err))
			}
		}
	}
}

// checkFetchFlags checks the flags that say how a page is fetched: the body's limit, the timeout,
// the user agent, the TLS fingerprint and the proxies.
func checkFetchFlags(o RunOptions, bad flagProblem) {
	if o.MaxBodyBytes < 1 {
		bad("max-body-bytes", o.MaxBodyBytes, "must be at least 1")
	}
	if o.MemoryMB < 0 {
		bad("fetch-memory-mb", o.MemoryMB, "must be 0 (no bound) or more")
	}
	if o.FetchTimeout <= 0 {
		bad("fetch-timeout", o.FetchTimeout, "must be more than 0")
	}
	if !httpfetch.ValidFingerprint(o.Fingerprint) {
		bad("tls-fingerprint", fmt.Sprintf("%q", o.Fingerprint), "want chrome, or none for Go's own")
	} else if _, err := httpfetch.UserAgentFor(o.UserAgent, o.Fingerprint); err != nil {
		bad("user-agent", fmt.Sprintf("%q", o.UserAgent), "%v", err)
	}
	for _, p := range o.Proxies {
		if _, err := httpfetch.ParseProxy(p); err != nil {
			bad("proxy", "(redacted)", "%v", err) // the error names the proxy without its password
		}
	}
	if o.ProxyRotation != httpfetch.RotatePerRequest && o.ProxyRotation != httpfetch.StickyPerHost {
		bad("proxy-rotation", fmt.Sprintf("%q", o.ProxyRotation), "want %s or %s", httpfetch.RotatePerRequest, httpfetch.StickyPerHost)
	}
	if len(o.Proxies) > 0 && o.Fingerprint == httpfetch.FingerprintChrome {
		bad("proxy", "(redacted)", "not with --tls-fingerprint chrome yet: use one or the other")
	}
}

// checkRetryFlags checks the flags that say how the run stops, retries and gives up: the grace of
// a stop, the queues' visibility and receives, the tries, the circuits, and the budget's price.
func checkRetryFlags(o RunOptions, bad flagProblem) {
	if o.StopGrace < 0 {
		bad("stop-grace", o.StopGrace, "must be 0 (stop at once) or more")
	}
	if o.Visibility < time.Second {
		bad("visibility", o.Visibility, "must be at least 1s")
	}
	if o.MaxReceive < 1 {
		bad("max-receive", o.MaxReceive, "must be at least 1 (the stack uses 5)")
	}
	if o.MaxTries < 1 || o.MaxTries > 20 {
		bad("max-tries", o.MaxTries, "want 1 to 20 requests of a failing URL")
	}
	if o.MaxTimeoutTries < 1 || o.MaxTimeoutTries > 20 {
		bad("max-timeout-tries", o.MaxTimeoutTries, "want 1 to 20 requests of a URL that times out")
	}
	if o.RetryWait <= 0 || o.RetryWait > time.Minute {
		bad("retry-wait", o.RetryWait, "want more than 0 and at most 1m")
	}
	if o.CircuitFailures == 0 || o.CircuitFailures < -1 || o.CircuitFailures > 1000 {
		bad("circuit-failures", o.CircuitFailures, "want 1 to 1000 failures in a row, or -1 for no circuit")
	}
	if o.CircuitProbe < time.Second || o.CircuitProbe > time.Hour {
		bad("circuit-probe", o.CircuitProbe, "want 1s to 1h")
	}
	if o.BudgetUSD < 0 {
		bad("budget-usd", o.BudgetUSD, "must be 0 (no budget) or more")
	}
	if _, err := (pipeline.Config{Prices: o.Prices}).PriceTable(); err != nil {
		bad("prices", o.Prices, "%v", err)
	}
}
