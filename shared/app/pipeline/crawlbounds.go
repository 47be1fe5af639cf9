package pipeline

import (
	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
)

// RetryPolicy is the fetcher's retry policy of c.MaxTries and c.RetryWait.
func (c Config) RetryPolicy() retry.Tries {
	p := retry.DefaultPolicy()
	p.Max, p.First, p.Last = c.MaxTries, c.RetryWait, 15*c.RetryWait
	return p
}

// SpecBounds are the ceilings c puts on what a crawl spec may set: its depth, pages, pages per
// host and rate, and its include patterns when c has its own.
func (c Config) SpecBounds() crawlspec.Bounds {
	b := crawlspec.Bounds{MaxPages: c.MaxPages, MaxPagesPerHost: c.MaxPagesPerHost, HostRPS: c.HostRPS, Include: len(c.Include) > 0,
		UserAgent: c.UserAgent, Fingerprint: c.Fingerprint, LocalSecrets: c.LocalSecrets, Secrets: c.SecretHeaders,
		Proxies: len(c.Proxies) > 0 || c.ProxiesSecret != ""}
	if c.MaxDepth >= 0 {
		b.MaxDepth = &c.MaxDepth
	}
	return b
}
