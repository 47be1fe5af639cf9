package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/crawl/web/extract"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
)

// tryHelp is the help of `crawl try`.
var tryHelp = cmdHelp{
	usage: "crawl try [flags] SPEC URL|FILE\n       crawl try [flags] --css SELECTOR | --xpath EXPR | --json PATH URL|FILE",
	about: "Run a spec's extraction and item rules (or one --css, --xpath or --json field) on one page and print what it\n" +
		"yields, as the record's data and items would hold it: try a selector before a crawl. A URL is fetched once, with the spec's\n" +
		"User-Agent and headers and the same guard against non-public addresses as a crawl (--allow-net admits\n" +
		"a range); robots.txt is not read, as for any single request a person makes. A FILE is a saved page:\n" +
		"--base names its URL, against which url: fields resolve. A JSON response (or a .json FILE) is read by the\n" +
		"json: selectors (JSONPath, RFC 9535), an HTML one by the others.",
	examples: `crawl try shop.yaml https://shop.example.com/p/kettle
crawl try --css 'h1' https://example.com/
crawl try --xpath '//a/@href' --all --url https://example.com/
crawl try --base https://shop.example.com/p/kettle shop.yaml saved.html
crawl try --json '$.products[*].name' --all https://shop.example.com/api/products`,
}

// tryFlags are the flags of `crawl try`.
type tryFlags struct {
	field     extract.Field // the --css or --xpath field, named "value"
	base      string
	allowNet  listFlag
	userAgent string
	timeout   time.Duration
}

// Tried is what `crawl try` prints: the page and what its extraction yields.
type Tried struct {
	URL        string            `json:"url"`
	Status     int               `json:"status,omitempty"`
	Data       map[string]any    `json:"data"`
	DataErrors map[string]string `json:"dataErrors,omitempty"`
	Items      map[string]any    `json:"items,omitempty"`
}

// try is `crawl try`: one page through a spec's extraction rules, or through one field.
func try(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f tryFlags
	fs := flag.NewFlagSet("try", flag.ContinueOnError)
	fs.StringVar(&f.field.CSS, "css", "", "a CSS selector to try, instead of a spec's fields")
	fs.StringVar(&f.field.XPath, "xpath", "", "an XPath 1.0 expression to try, instead of a spec's fields")
	fs.StringVar(&f.field.JSON, "json", "", "a JSONPath expression (RFC 9535) to try on a JSON response, instead of a spec's fields")
	fs.StringVar(&f.field.Attr, "attr", "", "with --css or --xpath: the attribute to take, not the text")
	fs.BoolVar(&f.field.All, "all", false, "with --css, --xpath or --json: every match, as a list")
	fs.StringVar(&f.field.Regexp, "regexp", "", "with --css, --xpath or --json: keep the match of each value (its first group)")
	fs.BoolVar(&f.field.URL, "url", false, "with --css, --xpath or --json: resolve each value against the page's URL")
	fs.StringVar(&f.base, "base", "", "for a FILE: the page's URL (default: the file's own file:// URL)")
	fs.Var(&f.allowNet, "allow-net", "CIDR (or IP) of a non-public range that may be fetched; repeatable")
	fs.StringVar(&f.userAgent, "user-agent", pipeline.DefaultUserAgent, "the User-Agent, when the spec sets none")
	fs.DurationVar(&f.timeout, "fetch-timeout", 30*time.Second, "time for the fetch, redirects and body included")
	if err := parseFlags(fs, args, tryHelp); err != nil {
		return usageError(stdout, stderr, "try", err)
	}
	one := f.field.CSS != "" || f.field.XPath != "" || f.field.JSON != ""
	rest := fs.Args()
	switch {
	case one && len(rest) != 1:
		return usageError(stdout, stderr, "try", fmt.Errorf("want a URL or FILE after --css, --xpath or --json, got %d arguments", len(rest)))
	case !one && len(rest) != 2:
		return usageError(stdout, stderr, "try", fmt.Errorf("want SPEC and a URL or FILE (or --css, --xpath or --json), got %d arguments", len(rest)))
	}
	spec := &crawlspec.Spec{}
	if one {
		f.field.Name = "value"
		spec.Extract = []extract.Field{f.field}
	} else {
		var err error
		if spec, err = readTrySpec(rest[0]); err != nil {
			fmt.Fprintf(stderr, "crawl try: %v\n", err)
			return ExitUsage
		}
	}
	fields, err := extract.Compile(spec.Extract, spec.Items...)
	if err != nil {
		fmt.Fprintf(stderr, "crawl try: %v\n", err)
		return ExitUsage
	}
	if len(spec.SecretHeaders) > 0 {
		fmt.Fprintf(stderr, "crawl try: the spec's secret headers are not sent (%s): only crawls read secrets\n", strings.Join(slices.Sorted(maps.Keys(spec.SecretHeaders)), ", "))
	}
	page, err := loadPage(ctx, rest[len(rest)-1], spec, f)
	if err != nil {
		fmt.Fprintf(stderr, "crawl try: %v\n", err)
		return ExitFailed
	}
	var res extract.Result
	if extract.IsJSON(page.contentType) {
		// A JSON response that does not decode is said so, not shown as fields that found nothing.
		if res, err = fields.ExtractJSON(page.url, page.body); err != nil {
			fmt.Fprintf(stderr, "crawl try: %s: %v\n", page.url, err)
			return ExitFailed
		}
	} else {
		res = fields.Extract(page.url, page.body, page.contentType)
	}
	out, err := json.MarshalIndent(Tried{URL: page.url.String(), Status: page.status, Data: res.Data, DataErrors: res.Errors, Items: res.Items}, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "crawl try: %v\n", err)
		return ExitFailed
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return ExitOK
}

// readTrySpec reads the spec file at path. Its seeds are not used, and the bounds are not the
// stack's: only its extraction, User-Agent and headers matter here.
func readTrySpec(path string) (*crawlspec.Spec, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the spec: %w", err)
	}
	if !crawlspec.IsSpec(path, body) {
		return nil, fmt.Errorf("%s is not a crawl spec (a .yaml or .json file, docs/spec.md)", path)
	}
	spec, err := crawlspec.Parse(body, crawlspec.Bounds{LocalSecrets: true})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(spec.Extract) == 0 && len(spec.Items) == 0 {
		return nil, fmt.Errorf("%s has no extract section and no items: nothing to try (or give --css, --xpath or --json)", path)
	}
	return spec, nil
}

// triedPage is the page to extract from.
type triedPage struct {
	url         *url.URL
	status      int
	body        []byte
	contentType string
}

// loadPage fetches target when it is an http(s) URL, and otherwise reads it as a saved file.
func loadPage(ctx context.Context, target string, spec *crawlspec.Spec, f tryFlags) (triedPage, error) {
	if u, err := url.Parse(target); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return fetchPage(ctx, target, spec, f)
	}
	body, err := os.ReadFile(target)
	if err != nil {
		return triedPage{}, fmt.Errorf("read the page: %w (a URL starts with http:// or https://)", err)
	}
	base := f.base
	if base == "" {
		abs, err := filepath.Abs(target)
		if err != nil {
			return triedPage{}, err
		}
		base = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	}
	u, err := url.Parse(base)
	if err != nil || !u.IsAbs() {
		return triedPage{}, fmt.Errorf("--base %q: want an absolute URL", base)
	}
	ct := mime.TypeByExtension(filepath.Ext(target))
	if ct == "" {
		ct = "text/html"
	}
	return triedPage{url: u, body: body, contentType: ct}, nil
}

// fetchPage GETs target as a crawl would: the guard, the spec's User-Agent and headers.
func fetchPage(ctx context.Context, target string, spec *crawlspec.Spec, f tryFlags) (triedPage, error) {
	allow, err := netguard.ParseCIDRs(f.allowNet)
	if err != nil {
		return triedPage{}, fmt.Errorf("--allow-net: %w", err)
	}
	ua, fp := f.userAgent, httpfetch.FingerprintGo
	if spec.UserAgent != "" {
		ua = spec.UserAgent
	}
	if spec.TLSFingerprint != "" {
		fp = spec.TLSFingerprint
	}
	if ua, err = httpfetch.UserAgentFor(ua, fp); err != nil {
		return triedPage{}, err
	}
	client, err := httpfetch.New(httpfetch.Options{UserAgent: ua, Fingerprint: fp, Guard: netguard.New(allow, nil), TotalTimeout: f.timeout})
	if err != nil {
		return triedPage{}, err
	}
	defer client.Close()
	// The spec's hosts section's headers and cookies go to their hosts, as in a crawl.
	hosts := &crawlspec.Crawl{Spec: &spec.Settings}
	ctx = httpfetch.WithHostHeaders(httpfetch.WithRequest(ctx, ua, spec.Headers), hosts.HeaderFor)
	if ctx, err = tryLogin(ctx, client, hosts, target); err != nil {
		return triedPage{}, err
	}
	resp, err := client.Get(ctx, target)
	if err != nil {
		var hint string
		if errclass.Of(err) == errclass.SSRF {
			hint = " (--allow-net CIDR admits a non-public range)"
		}
		return triedPage{}, fmt.Errorf("fetch %s: %w%s", target, err, hint)
	}
	u, err := url.Parse(resp.URL)
	if err != nil {
		return triedPage{}, fmt.Errorf("the final URL %q: %w", resp.URL, err)
	}
	return triedPage{url: u, status: resp.Status, body: resp.Body, contentType: resp.Header.Get("Content-Type")}, nil
}

// tryLogin logs in to target's host first when its rule has a login, as a crawl does before the
// host's first page (its secrets read from env: and file: references), and returns ctx carrying the session's cookie jar.
func tryLogin(ctx context.Context, client *httpfetch.Client, hosts *crawlspec.Crawl, target string) (context.Context, error) {
	u, err := url.Parse(target)
	if err != nil || !hosts.Session(u.Host) {
		return ctx, nil // a bad URL is the GET's to report
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return ctx, err
	}
	ctx = httpfetch.WithJar(ctx, jar)
	if err := hosts.ReadLogins(ctx, secretref.Local{}); err != nil {
		return ctx, err
	}
	lg, err := hosts.LoginFor(u.Host)
	if err != nil || lg == nil {
		return ctx, err
	}
	s := httpfetch.Send{Method: lg.Method, Header: lg.Header.Clone()}
	login := *lg.URL
	if lg.Method == http.MethodGet {
		login.RawQuery = lg.Form.Encode()
	} else {
		s.Body = []byte(lg.Form.Encode())
		s.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := client.Do(ctx, login.String(), s, nil)
	switch {
	case err != nil:
		return ctx, fmt.Errorf("login to %s: %w", u.Host, err)
	case resp.Status >= 400 || lg.Refused(resp.Body):
		return ctx, fmt.Errorf("login to %s: status %d: the answer says it opened no session (a wrong password?)", u.Host, resp.Status)
	}
	return ctx, nil
}
