package crawlspec

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/crawlstack/crawlstack/shared/crawl/priority"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/crawl/web/doctype"
	"github.com/crawlstack/crawlstack/shared/crawl/web/extract"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

// Bounds are the stack's ceilings on what a spec may set; the zero Bounds sets none. The stack's settings are a spec's
// defaults; these few are its limits too, so that whoever runs the stack decides how much and how
// fast any crawl may go, and a spec decides where it goes and what it keeps.
type Bounds struct {
	// MaxDepth, when set, bounds max_depth (CRAWL_MAX_DEPTH, --max-depth).
	MaxDepth *int
	// MaxPages bounds max_pages (CRAWL_MAX_PAGES, --max-pages; 0: no bound). With a bound, a
	// spec that sets no max_pages gets it.
	MaxPages int
	// MaxPagesPerHost bounds max_pages_per_host (CRAWL_MAX_PAGES_PER_HOST; 0: no bound).
	MaxPagesPerHost int
	// HostRPS bounds rate (CRAWL_HOST_RPS, --host-rps; 0: no bound).
	HostRPS float64
	// HostConcurrency bounds the concurrency of the hosts section (CRAWL_HOST_CONCURRENCY,
	// --host-concurrency; 0: no bound).
	HostConcurrency int
	// Include is set when the stack has include patterns (CRAWL_INCLUDE): they bound every crawl,
	// and a spec may not replace them with its own. Exclude patterns always add up.
	Include bool
	// UserAgent and Fingerprint are the stack's (CRAWL_USER_AGENT, CRAWL_TLS_FINGERPRINT): a spec
	// that sets one of the two must still agree with the other (httpfetch.UserAgentFor).
	UserAgent, Fingerprint string
	// LocalSecrets allows secret headers by env: and file: reference (crawl run); on AWS a spec
	// may name SSM parameters and Secrets Manager secrets only.
	LocalSecrets bool
	// Secrets are the name prefixes of the parameters and secrets a deployed stack's fetch
	// function may read (secretref.Allowed): without LocalSecrets, a spec's ssm: and
	// secretsmanager: references must be under them, and with none set a spec may name no secret.
	Secrets secretref.Allowed
	// Proxies is set when the stack fetches through proxies (CRAWL_PROXIES, its secret): the chrome
	// TLS fingerprint does not go through them (httpfetch), so a spec may not ask for it.
	Proxies bool
	// MaxTries bounds every tries of the spec's retry section: the most the stack's retry policy
	// gives any class (retry.Table.MostTries; 0: no bound).
	MaxTries int
}

// bounds checks the spec's settings against b, at the lines of the settings.
func (d *decoder) bounds(root *yaml.Node, s *Spec, b Bounds) {
	at := func(key string) *yaml.Node {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == key {
				return root.Content[i+1]
			}
		}
		return root
	}
	over := func(key, env string, got, bound any) {
		d.fail(at(key), key, "%v is over the stack's bound of %v (%s)", got, bound, env)
	}
	if s.MaxDepth != nil && b.MaxDepth != nil && *s.MaxDepth > *b.MaxDepth {
		over("max_depth", "CRAWL_MAX_DEPTH, --max-depth", *s.MaxDepth, *b.MaxDepth)
	}
	if s.MaxPages != nil && b.MaxPages > 0 && *s.MaxPages > b.MaxPages {
		over("max_pages", "CRAWL_MAX_PAGES, --max-pages", *s.MaxPages, b.MaxPages)
	}
	if s.MaxPagesPerHost != nil && b.MaxPagesPerHost > 0 && *s.MaxPagesPerHost > b.MaxPagesPerHost {
		over("max_pages_per_host", "CRAWL_MAX_PAGES_PER_HOST, --max-pages-per-host", *s.MaxPagesPerHost, b.MaxPagesPerHost)
	}
	if s.Rate != nil && b.HostRPS > 0 && *s.Rate > b.HostRPS {
		over("rate", "CRAWL_HOST_RPS, --host-rps", *s.Rate, b.HostRPS)
	}
	if s.UserAgent != "" || s.TLSFingerprint != "" {
		ua, fp := cmp.Or(s.UserAgent, b.UserAgent), b.Fingerprint
		if s.TLSFingerprint != "" {
			fp = fingerprintOf(s.TLSFingerprint)
		}
		if _, err := httpfetch.UserAgentFor(ua, fp); err != nil {
			key := "user_agent"
			if s.UserAgent == "" {
				key = "tls_fingerprint"
			}
			d.fail(at(key), key, "%v", err)
		}
	}
	if fingerprintOf(s.TLSFingerprint) == httpfetch.FingerprintChrome && b.Proxies {
		d.fail(at("tls_fingerprint"), "tls_fingerprint", "%q does not go through the proxies this stack fetches through (CRAWL_PROXIES, proxiesSecret): leave it out, or deploy a stack without proxies",
			httpfetch.FingerprintChrome)
	}
	d.boundHosts(at("hosts"), s, b)
	if len(s.Include) > 0 && b.Include {
		d.fail(at("include"), "include", "the stack sets include patterns (CRAWL_INCLUDE, --include) that bound every crawl: a spec may add exclude patterns only")
	}
}

// Crawl is what the handlers work with for one crawl: the stack's settings, with its spec's over
// them.
type Crawl struct {
	Rules           scope.Rules
	MaxPages        int
	MaxPagesPerHost int
	// HostRPS is the rate per host (0: no limit).
	HostRPS float64
	// UserAgent is the User-Agent sent, whose product token picks the robots.txt group. Over
	// resolves httpfetch.UserAgentBrowser to the browser's own.
	UserAgent string
	// Fingerprint is the TLS fingerprint of the crawl's requests (httpfetch.FingerprintGo or
	// FingerprintChrome).
	Fingerprint string
	// Header holds the spec's extra request headers (nil: none); those given by reference are
	// in it once specstore has read them (Secret names them).
	Header http.Header
	// SecretRefs are the spec's secret headers' references, by name (Settings.SecretHeaders).
	SecretRefs map[string]string
	// Secret names the headers whose values are secrets: the spec's secret headers, and the
	// headers that carry credentials. WARC request records hold them redacted.
	Secret []string
	// Fields are the spec's extraction rules (nil: none).
	Fields *extract.Set
	// Spec is the crawl's spec settings; nil for a crawl of a URL list.
	Spec *Settings
	// Previous is the crawl this one recrawls ("": none; see Settings.Previous).
	Previous string
	// logins are the login requests of Spec.Hosts, by index, their secrets read (ReadLogins),
	// and loginErr why one could not be.
	logins   []*LoginRequest
	loginErr error
	// hostHeaders are what each of Spec.Hosts sends besides Header (HostRule.header), made once.
	hostHeaders []http.Header
	// Retry is the crawl's retry policy: the stack's, with the spec's retry section over it
	// (retry.Table.Over). A zero Table leaves the fetcher's own.
	Retry retry.Table
	// Keep are the media types stored though not parsed (Settings.Keep), and those of the kinds
	// parsed besides HTML (Parse), which fetch stores alike (nil: none).
	Keep []string
	// Parse are the kinds of response parsed besides HTML (Settings.Parse, and JSON for a spec
	// with a json selector; nil: none).
	Parse []doctype.Kind
	// Priority ranks the crawl's URLs for their admission (nil: all Normal, in message order).
	Priority *priority.Ranker
}

// Over returns base with s's settings over it. s was checked when its spec was read, against the
// bounds of the stack then; Over compiles its patterns and fields again, and fails only on
// settings a spec file could not have held.
func (s *Settings) Over(base Crawl) (*Crawl, error) {
	c := base
	if s == nil {
		return c.resolved()
	}
	c.Spec = s
	c.Previous = s.Previous
	if s.Version != Version {
		return nil, fmt.Errorf("crawl settings of schema version %d: this crawler reads version %d", s.Version, Version)
	}
	if s.Scope != "" {
		m, err := scope.ParseMode(string(s.Scope))
		if err != nil {
			return nil, err
		}
		c.Rules.Mode = m
	}
	if len(s.Include) > 0 {
		inc, err := scope.ParsePatterns(s.Include)
		if err != nil {
			return nil, fmt.Errorf("include: %w", err)
		}
		c.Rules.Include = inc
	}
	if len(s.Exclude) > 0 {
		exc, err := scope.ParsePatterns(s.Exclude)
		if err != nil {
			return nil, fmt.Errorf("exclude: %w", err)
		}
		c.Rules.Exclude = append(slices.Clip(base.Rules.Exclude), exc...)
	}
	if s.MaxDepth != nil {
		c.Rules.MaxDepth = *s.MaxDepth
	}
	if len(s.Hosts) > 0 {
		if err := checkHosts(s.Hosts); err != nil {
			return nil, err
		}
		c.hostHeaders = make([]http.Header, len(s.Hosts))
		for i := range s.Hosts {
			c.hostHeaders[i] = s.Hosts[i].header()
		}
		if slices.ContainsFunc(s.Hosts, func(r HostRule) bool { return r.MaxDepth != nil }) {
			c.Rules.HostDepths = hostDepths(s.Hosts, c.Rules.MaxDepth)
		}
	}
	if s.MaxPages != nil {
		c.MaxPages = *s.MaxPages
	}
	if s.MaxPagesPerHost != nil {
		c.MaxPagesPerHost = *s.MaxPagesPerHost
	}
	if s.Rate != nil {
		c.HostRPS = *s.Rate
	}
	if s.UserAgent != "" {
		c.UserAgent = s.UserAgent
	}
	if s.TLSFingerprint != "" {
		c.Fingerprint = fingerprintOf(s.TLSFingerprint)
	}
	if len(s.Headers) > 0 {
		c.Header = s.Headers.Clone()
	}
	c.SecretRefs = s.SecretHeaders
	if s.Retry != nil {
		if err := checkRetry(s.Retry); err != nil {
			return nil, fmt.Errorf("retry: %w", err)
		}
		c.Retry = s.Retry.Over(base.Retry)
	}
	c.Keep, c.Parse = s.Keep, s.Parse
	if s.selectsJSON() && !slices.Contains(c.Parse, doctype.JSON) {
		c.Parse = append(slices.Clip(c.Parse), doctype.JSON) // a json selector needs JSON parsed
	}
	for _, k := range c.Parse {
		c.Keep = append(slices.Clip(c.Keep), doctype.MediaTypes(k)...)
	}
	if len(s.Priority) > 0 {
		r, err := priority.Compile(s.Priority)
		if err != nil {
			return nil, err
		}
		c.Priority = r
	}
	if len(s.Extract) > 0 || len(s.Items) > 0 {
		set, err := extract.Compile(s.Extract, s.Items...)
		if err != nil {
			return nil, fmt.Errorf("extract: %w", err)
		}
		c.Fields = set
	}
	return c.resolved()
}

// Parses reports whether the crawl parses responses of kind k.
func (c *Crawl) Parses(k doctype.Kind) bool { return c != nil && slices.Contains(c.Parse, k) }

// selectsJSON reports whether a field or item rule of s uses a json selector.
func (s *Settings) selectsJSON() bool {
	json := func(f extract.Field) bool { return f.JSON != "" }
	if slices.ContainsFunc(s.Extract, json) {
		return true
	}
	return slices.ContainsFunc(s.Items, func(r extract.Rule) bool { return r.JSON != "" || slices.ContainsFunc(r.Fields, json) })
}

// resolved is c with its User-Agent as sent: the browser's own for httpfetch.UserAgentBrowser.
func (c Crawl) resolved() (*Crawl, error) {
	ua, err := httpfetch.UserAgentFor(c.UserAgent, c.Fingerprint)
	if err != nil {
		return nil, err
	}
	c.UserAgent = ua
	return &c, nil
}

// The values of tls_fingerprint.
const (
	FingerprintChrome = httpfetch.FingerprintChrome
	FingerprintGo     = "go"
)

// fingerprintOf is the httpfetch fingerprint of a tls_fingerprint value.
func fingerprintOf(v string) string {
	if v == FingerprintGo {
		return httpfetch.FingerprintGo
	}
	return v
}

// checkRetry checks stored retry settings as the spec's retry section was checked, but for the
// stack's bound, which was checked against the stack of the time the spec was read.
func checkRetry(t *retry.Table) error {
	if err := t.Default.Check(); err != nil {
		return fmt.Errorf("default: %w", err)
	}
	for c, cv := range t.Classes {
		if _, err := retry.ParseClass(string(c)); err != nil {
			return err
		}
		if err := cv.Check(); err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
	}
	return nil
}
