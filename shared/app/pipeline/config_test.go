package pipeline

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	c, err := FromEnv(env(map[string]string{
		"SCHEDULE_QUEUE_URL": "https://sqs/s", "FETCH_QUEUE_URL": "https://sqs/f", "PARSE_QUEUE_URL": "https://sqs/p",
		"CRAWL_SCOPE": "domain", "CRAWL_MAX_DEPTH": "3", "CRAWL_MAX_PAGES": "1000", "CRAWL_HOST_RPS": "0.5",
		"CRAWL_ALLOW_NET": "10.0.0.0/8,127.0.0.1", "CRAWL_ALLOW_PORTS": "8080", "CRAWL_FETCH_TIMEOUT": "20s",
		"CRAWL_MAX_RECEIVE": "6", "CRAWL_USER_AGENT": "mybot/1.0", "CRAWL_BATCH_CONCURRENCY": "50",
		"CRAWL_MAX_TRIES": "3", "CRAWL_RETRY_WAIT": "5s", "CRAWL_SLOT_LEAD": "2s", "CRAWL_BUDGET_USD": "1.5",
		"CRAWL_WARC_INDEX": "crawl",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.FetchQueue != "https://sqs/f" || c.Scope != scope.Domain || c.MaxDepth != 3 || c.MaxPages != 1000 ||
		c.HostRPS != 0.5 || len(c.AllowNets) != 2 || len(c.Ports) != 3 || c.FetchTimeout != 20*time.Second ||
		c.MaxReceive != 6 || c.UserAgent != "mybot/1.0" || c.BatchConcurrency != 50 || c.MaxTries != 3 ||
		c.RetryWait != 5*time.Second || c.SlotLead != 2*time.Second || c.BudgetUSD != 1.5 || c.WARCIndex != IndexPerCrawl {
		t.Errorf("FromEnv = %+v", c)
	}
	d, err := FromEnv(env(nil))
	if err != nil {
		t.Fatalf("the defaults must be valid: %v", err)
	}
	if d.UserAgent != DefaultUserAgent || d.HostRPS != 1 || d.Scope != scope.Host || d.WARCIndex != IndexEachFile {
		t.Errorf("defaults = %+v", d)
	}
}

func TestFromEnvNamesTheBadVariable(t *testing.T) {
	tests := map[string]string{
		"CRAWL_MAX_DEPTH":         "three",
		"CRAWL_HOST_RPS":          "fast",
		"CRAWL_ALLOW_PORTS":       "80,http",
		"CRAWL_FETCH_TIMEOUT":     "soon",
		"CRAWL_MAX_BODY_BYTES":    "-1",
		"CRAWL_SCOPE":             "planet",
		"CRAWL_ALLOW_NET":         "10.0.0.0/99",
		"CRAWL_MAX_RECEIVE":       "0",
		"CRAWL_BATCH_CONCURRENCY": "many",
		"CRAWL_MAX_TRIES":         "0",
		"CRAWL_RETRY_WAIT":        "0s",
		"CRAWL_SLOT_LEAD":         "-1s",
		"CRAWL_BUDGET_USD":        "lots",
		"CRAWL_WARC_INDEX":        "nowhere",
		"CRAWL_RETRY_CLASSES":     "timout=2",
	}
	for name, value := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := FromEnv(env(map[string]string{name: value}))
			if err == nil {
				t.Fatalf("%s=%q was accepted", name, value)
			}
			if !strings.Contains(err.Error(), value) && !strings.Contains(err.Error(), name) {
				t.Errorf("the error does not name %s or %q: %v", name, value, err)
			}
		})
	}
}

func TestFromEnvPatterns(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    []string
		wantErr string // a substring of the error besides the variable's name; "" means success
	}{
		{name: "JSON array with commas inside a pattern",
			value: `["^https://a\\.test/(x|y){1,3}/", "^https://b\\.test/"]`,
			want:  []string{`^https://a\.test/(x|y){1,3}/`, `^https://b\.test/`}},
		{name: "JSON array after spaces", value: "  [\"a,b\"]\n", want: []string{"a,b"}},
		{name: "empty JSON array", value: `[]`, want: []string{}},
		{name: "one pattern per line, blank lines ignored",
			value: "^https://a\\.test/\n\n  ^https://b\\.test/(p|q)  \r\n",
			want:  []string{`^https://a\.test/`, `^https://b\.test/(p|q)`}},
		{name: "a single pattern with commas is one pattern",
			value: `^https://a\.test/(x|y){1,3}/`, want: []string{`^https://a\.test/(x|y){1,3}/`}},
		{name: "malformed JSON", value: `["^https://a\.test/"`, wantErr: "JSON array"},
		{name: "JSON array of numbers", value: `[1, 2]`, wantErr: "JSON array"},
		{name: "data after the JSON array", value: `["a"] ["b"]`, wantErr: "JSON array"},
		{name: "empty pattern in a JSON array", value: `["a", ""]`, wantErr: "pattern 2 is empty"},
		{name: "invalid regexp on a line", value: "^https://a\\.test/\n(x|y", wantErr: "(x|y"},
		{name: "invalid regexp in a JSON array", value: `["^https://a\\.test/[z"]`, wantErr: "missing closing ]"},
	}
	for _, name := range []string{"CRAWL_INCLUDE", "CRAWL_EXCLUDE"} {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				c, err := FromEnv(env(map[string]string{name: tt.value}))
				if tt.wantErr != "" {
					if err == nil {
						t.Fatalf("%s=%q was accepted: %q %q", name, tt.value, c.Include, c.Exclude)
					}
					if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), tt.wantErr) {
						t.Errorf("the error does not name %s and %q: %v", name, tt.wantErr, err)
					}
					return
				}
				if err != nil {
					t.Fatalf("%s=%q: %v", name, tt.value, err)
				}
				got, other := c.Include, c.Exclude
				if name == "CRAWL_EXCLUDE" {
					got, other = other, got
				}
				if !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
					t.Errorf("%s=%q gives %q, want %q", name, tt.value, got, tt.want)
				}
				if other != nil {
					t.Errorf("%s set the other list too: %q", name, other)
				}
			})
		}
	}
}

// TestTheDefaultsGiveUpOnABadURLWithinTwoMinutes: with the default retry policy and fetch limits,
// a URL that never answers, trickles a byte every few seconds, or keeps answering 5xx or 429
// (with a Retry-After it cannot use) is given up in under two minutes of requests and waits.
func TestTheDefaultsGiveUpOnABadURLWithinTwoMinutes(t *testing.T) {
	p := DefaultConfig().RetryPolicy()
	for _, tc := range []struct {
		name   string
		class  errclass.Class
		perTry time.Duration
	}{
		{"no answer", errclass.Timeout, httpfetch.DefaultHeaderTimeout},
		// Cut by its rate once DefaultMinRateAfter has passed, at its next byte.
		{"a byte every 3 s", errclass.Timeout, httpfetch.DefaultMinRateAfter + 3*time.Second},
		{"5xx", errclass.HTTP5xx, time.Second},
		{"429 without a usable Retry-After", errclass.HTTP429, time.Second},
	} {
		if got := retry.GiveUpAfter(p, tc.class, tc.perTry); got >= 2*time.Minute {
			t.Errorf("%s: given up after %v, want under 2m", tc.name, got)
		}
	}
}

func TestValidateFetchInFlightAndAdmitConcurrency(t *testing.T) {
	for _, c := range []struct {
		n  int
		ok bool
	}{{0, true}, {32, true}, {-1, false}} {
		cfg := DefaultConfig()
		cfg.FetchInFlight = c.n
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("FetchInFlight %d: Validate = %v, want ok %v", c.n, err, c.ok)
		} else if err != nil && !strings.Contains(err.Error(), "in flight") {
			t.Errorf("FetchInFlight %d: %v does not name the setting", c.n, err)
		}
		cfg = DefaultConfig()
		cfg.AdmitConcurrency = c.n
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("AdmitConcurrency %d: Validate = %v, want ok %v", c.n, err, c.ok)
		} else if err != nil && !strings.Contains(err.Error(), "admit concurrency") {
			t.Errorf("AdmitConcurrency %d: %v does not name the setting", c.n, err)
		}
	}
}

// The functions read their proxies from CRAWL_PROXIES and CRAWL_PROXY_ROTATION; a bad one is
// refused without its password, and so are proxies with the chrome fingerprint, and a browser's
// User-Agent without it.
func TestProxiesAndFingerprintFromEnv(t *testing.T) {
	env := map[string]string{"CRAWL_PROXIES": "http://u:pw-secret@127.0.0.1:3128, socks5://127.0.0.1:1080", "CRAWL_PROXY_ROTATION": "host"}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Proxies) != 2 || c.Proxies[1] != "socks5://127.0.0.1:1080" || c.ProxyRotation != "host" {
		t.Errorf("proxies %q, rotation %q", c.Proxies, c.ProxyRotation)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, tt := range []struct {
		set  func(*Config)
		says string
	}{
		{func(c *Config) { c.Proxies = []string{"ftp://u:pw-secret@p.test:21"} }, "want an http://, https:// or socks5:// URL"},
		{func(c *Config) { c.ProxyRotation = "random" }, `proxy rotation "random"`},
		{func(c *Config) { c.Fingerprint = "chrome" }, "do not go together"},
		{func(c *Config) { c.Proxies, c.UserAgent = nil, "browser" }, `only with the TLS fingerprint "chrome"`},
	} {
		bad := c
		tt.set(&bad)
		err := bad.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.says) || strings.Contains(err.Error(), "pw-secret") {
			t.Errorf("Validate = %v; want an error saying %q, without the password", err, tt.says)
		}
	}
}

// The fetch function's memory budget follows its memory: the function's on Lambda, unless
// CRAWL_FETCH_MEMORY_MB says otherwise; none is set outside Lambda without it.
func TestTheFetchMemoryBudgetFollowsTheFunctionsMemory(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want int64
	}{
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512"}, 256 << 20},
		{map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512", "CRAWL_FETCH_MEMORY_MB": "2048"}, 1 << 30},
		{nil, 0},
	}
	for _, tt := range tests {
		c, err := FromEnv(env(tt.env))
		if err != nil {
			t.Fatal(err)
		}
		if got := fetcherConfig(c).MemoryBudget; got != tt.want {
			t.Errorf("%v: budget %d, want %d", tt.env, got, tt.want)
		}
	}
}

// TestTheStacksRetryClasses: CRAWL_RETRY_CLASSES gives classes their own tries and waits over
// CRAWL_MAX_TRIES and CRAWL_RETRY_WAIT, in the policy of every crawl and in the bound on specs.
func TestTheStacksRetryClasses(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"CRAWL_MAX_TRIES": "3", "CRAWL_RETRY_WAIT": "1s",
		"CRAWL_RETRY_CLASSES": "timeout=1,http_5xx=6/10s"}))
	if err != nil {
		t.Fatal(err)
	}
	p := c.RetryPolicy()
	for class, want := range map[errclass.Class]retry.Curve{errclass.Timeout: {Tries: 1, Wait: time.Second},
		errclass.HTTP5xx: {Tries: 6, Wait: 10 * time.Second}, errclass.Connect: {Tries: 3, Wait: time.Second}} {
		if got := p.Curve(class); got != want {
			t.Errorf("%s: %+v, want %+v", class, got, want)
		}
	}
	if b := c.SpecBounds(); b.MaxTries != 6 {
		t.Errorf("specs' bound on tries = %d, want 6, the most any class gets", b.MaxTries)
	}
	bad := DefaultConfig()
	bad.RetryClasses = map[errclass.Class]retry.Curve{errclass.HTTP4xx: {Tries: 2}, errclass.Timeout: {Tries: 30}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `"http_4xx" is never tried again`) || !strings.Contains(err.Error(), "timeout: tries 30") {
		t.Errorf("Validate of bad retry classes: %v, want both named", err)
	}
	_, err = FromEnv(env(map[string]string{"CRAWL_RETRY_CLASSES": "timout=2,http_4xx=1"}))
	for _, want := range []string{"CRAWL_RETRY_CLASSES", `did you mean "timeout"?`, `"http_4xx" is never tried again`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a bad CRAWL_RETRY_CLASSES: %v, want it to say %q", err, want)
		}
	}
}

// A URL whose requests time out takes DefaultTimeoutTries requests unless the stack names the
// timeout class, never more than MaxTries; the other retried classes take MaxTries.
func TestATimeoutTakesFewerTriesByDefault(t *testing.T) {
	c := DefaultConfig()
	if got := c.RetryPolicy().Attempts(errclass.Timeout); got != DefaultTimeoutTries {
		t.Errorf("timeout: %d requests, want %d", got, DefaultTimeoutTries)
	}
	if got := c.RetryPolicy().Attempts(errclass.HTTP5xx); got != c.MaxTries {
		t.Errorf("http_5xx: %d requests, want %d", got, c.MaxTries)
	}
	c.MaxTries = 1
	if got := c.RetryPolicy().Attempts(errclass.Timeout); got != 1 {
		t.Errorf("max tries 1: a timeout gets %d requests, want 1", got)
	}
	c = DefaultConfig()
	c.RetryClasses = map[errclass.Class]retry.Curve{errclass.Timeout: {Tries: 3}, errclass.HTTP5xx: {Tries: 6}}
	if p := c.RetryPolicy(); p.Attempts(errclass.Timeout) != 3 || p.Attempts(errclass.HTTP5xx) != 6 {
		t.Errorf("classes named: timeout %d, http_5xx %d, want 3 and 6", p.Attempts(errclass.Timeout), p.Attempts(errclass.HTTP5xx))
	}
	if DefaultConfig().RetryClasses != nil {
		t.Error("the default names no class: the stack's and crawl run's are the same, none")
	}
}

// A URL whose host's robots.txt is down asks for it DefaultRobotsUnavailableTries times (one wait
// of the robots cache's error TTL, not three) unless the stack names the class, never more than
// MaxTries; naming another class leaves it so.
func TestARobotsTxtThatIsDownTakesFewerTriesByDefault(t *testing.T) {
	c := DefaultConfig()
	if got := c.RetryPolicy().Attempts(errclass.RobotsUnavailable); got != 2 {
		t.Errorf("robots_unavailable: %d tries, want 2", got)
	}
	c.MaxTries = 1
	if got := c.RetryPolicy().Attempts(errclass.RobotsUnavailable); got != 1 {
		t.Errorf("max tries 1: robots_unavailable gets %d tries, want 1", got)
	}
	c = DefaultConfig()
	c.RetryClasses = map[errclass.Class]retry.Curve{errclass.Timeout: {Tries: 3}}
	if got := c.RetryPolicy().Attempts(errclass.RobotsUnavailable); got != 2 {
		t.Errorf("timeout named: robots_unavailable gets %d tries, want 2", got)
	}
	c.RetryClasses[errclass.RobotsUnavailable] = retry.Curve{Tries: 4}
	if got := c.RetryPolicy().Attempts(errclass.RobotsUnavailable); got != 4 {
		t.Errorf("robots_unavailable named with 4 tries: %d, want 4", got)
	}
	if len(c.RetryClasses) != 2 {
		t.Errorf("RetryPolicy changed the stack's classes: %v", c.RetryClasses)
	}
}
