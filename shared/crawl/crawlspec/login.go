package crawlspec

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
)

// Login is a host rule's login step: a request that opens a session with the host (a form POST
// of its fields, or a request with credentials in its headers), sent before the host's first page
// and again when a page says the session expired. Its host keeps a cookie jar (HostRule.Session),
// which holds the session the login opens. A field or header value given as {secret: REF} is read
// as the crawl's secret headers are (secretref), and never stored in the spec.
type Login struct {
	// URL is where the login request goes, on the rule's host.
	URL string `json:"url"`
	// Method is POST (the fields, form-encoded) or GET (the fields in the query).
	Method string `json:"method"`
	// Fields are the form's fields, in file order.
	Fields []LoginField `json:"fields,omitempty"`
	// Headers are the login request's plain headers, and SecretHeaders its headers by reference
	// (an Authorization header, say), by name.
	Headers       http.Header       `json:"headers,omitempty"`
	SecretHeaders map[string]string `json:"secretHeaders,omitempty"`
	// ExpiredStatus are the statuses of a page that say the session expired (default 401).
	ExpiredStatus []int `json:"expiredStatus,omitempty"`
	// ExpiredBody is a regular expression (RE2) whose match in a page's body says the session
	// expired ("": none). A redirect to the login URL says so too.
	ExpiredBody string `json:"expiredBody,omitempty"`
	// MaxLogins bounds the host's logins in the crawl (default DefaultMaxLogins): past it, its
	// URLs fail with login_failed.
	MaxLogins int `json:"maxLogins,omitempty"`
}

// LoginField is one form field: a plain value, or a secret reference.
type LoginField struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"`
	Secret string `json:"secret,omitempty"`
}

// DefaultMaxLogins is a host's logins per crawl unless its rule says otherwise; MaxMaxLogins
// bounds what a rule may say.
const (
	DefaultMaxLogins = 3
	MaxMaxLogins     = 20
)

// LoginRequest is a host's login with its secrets read: what fetch sends.
type LoginRequest struct {
	URL    *url.URL
	Method string
	Form   url.Values
	Header http.Header
	// Secret names the headers whose values are secrets, redacted in any record of the request.
	Secret    []string
	expired   []int
	expiredRE *regexp.Regexp
	Max       int
}

// Expired says whether a page's answer (its status, its final URL after redirects, its body)
// says the host's session expired.
func (l *LoginRequest) Expired(status int, finalURL string, body []byte) bool {
	if slices.Contains(l.expired, status) {
		return true
	}
	if f, err := url.Parse(finalURL); err == nil && f.Host == l.URL.Host && f.Path == l.URL.Path {
		return true // sent to the login page
	}
	return l.expiredRE != nil && l.expiredRE.Match(body)
}

// Refused says whether the answer to the login itself (its body) says the session is not open:
// the expired_body pattern matches it, as a login form shown again would.
func (l *LoginRequest) Refused(body []byte) bool {
	return l.expiredRE != nil && l.expiredRE.Match(body)
}

// login reads a host rule's login section.
func (d *decoder) login(n *yaml.Node, key string, pattern scope.HostPattern) *Login {
	l := &Login{Method: http.MethodPost}
	d.mapping(n, key, map[string]func(k, v *yaml.Node){
		"url": func(_, v *yaml.Node) {
			s, ok := d.str(v, join(key, "url"))
			if !ok {
				return
			}
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				d.fail(v, join(key, "url"), "want an http or https URL")
				return
			}
			l.URL = u.String()
		},
		"method": func(_, v *yaml.Node) {
			s, ok := d.str(v, join(key, "method"))
			if m := strings.ToUpper(s); ok && (m == http.MethodPost || m == http.MethodGet) {
				l.Method = m
			} else if ok {
				d.fail(v, join(key, "method"), "want POST or GET")
			}
		},
		"fields": func(_, v *yaml.Node) {
			d.mappingAny(v, join(key, "fields"), func(k, v *yaml.Node) {
				fk := join(join(key, "fields"), k.Value)
				if v.Kind == yaml.MappingNode {
					if ref, ok := d.secretRef(v, fk); ok {
						l.Fields = append(l.Fields, LoginField{Name: k.Value, Secret: ref})
					}
					return
				}
				if s, ok := d.str(v, fk); ok {
					l.Fields = append(l.Fields, LoginField{Name: k.Value, Value: s})
				}
			})
		},
		"headers": func(_, v *yaml.Node) { l.Headers, l.SecretHeaders = d.headersAt(v, join(key, "headers")) },
		"expired_status": func(_, v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				d.fail(v, join(key, "expired_status"), "want a list of HTTP statuses, such as [401, 403]")
				return
			}
			for _, s := range v.Content {
				if c, ok := d.integer(s, join(key, "expired_status"), 400); ok && c != nil && *c <= 599 {
					l.ExpiredStatus = append(l.ExpiredStatus, *c)
				} else if ok {
					d.fail(s, join(key, "expired_status"), "want a status from 400 to 599")
				}
			}
		},
		"expired_body": func(_, v *yaml.Node) {
			s, ok := d.str(v, join(key, "expired_body"))
			if !ok {
				return
			}
			if _, err := regexp.Compile(s); err != nil {
				d.fail(v, join(key, "expired_body"), "not a regular expression: %v", err)
				return
			}
			l.ExpiredBody = s
		},
		"max_logins": func(_, v *yaml.Node) {
			if m, ok := d.integer(v, join(key, "max_logins"), 1); ok && m != nil {
				if *m > MaxMaxLogins {
					d.fail(v, join(key, "max_logins"), "%d is over the limit of %d", *m, MaxMaxLogins)
				}
				l.MaxLogins = *m
			}
		},
	})
	if l.URL == "" {
		d.fail(n, key, "a login needs its url")
	} else if u, _ := url.Parse(l.URL); !pattern.Match(u.Host) {
		d.fail(n, join(key, "url"), "%s is not a host of %s: a login goes to its own host", u.Host, pattern)
	}
	return l
}

// loginOf is the login of rule i of c with its secrets read by r.
func loginOf(ctx context.Context, l *Login, r secretref.Resolver) (*LoginRequest, error) {
	u, err := url.Parse(l.URL)
	if err != nil {
		return nil, fmt.Errorf("login url: %w", err)
	}
	out := &LoginRequest{URL: u, Method: l.Method, Form: url.Values{}, Header: l.Headers.Clone(), expired: l.ExpiredStatus, Max: l.MaxLogins}
	if out.Header == nil {
		out.Header = http.Header{}
	}
	if len(out.expired) == 0 {
		out.expired = []int{http.StatusUnauthorized}
	}
	if out.Max == 0 {
		out.Max = DefaultMaxLogins
	}
	if l.ExpiredBody != "" {
		if out.expiredRE, err = regexp.Compile(l.ExpiredBody); err != nil {
			return nil, fmt.Errorf("login expired_body: %w", err)
		}
	}
	read := func(what, raw string) (string, error) {
		if r == nil {
			return "", fmt.Errorf("login %s: %w", what, secretref.ErrNoReader)
		}
		ref, err := secretref.Parse(raw, true)
		if err != nil {
			return "", fmt.Errorf("login %s: %w", what, err)
		}
		v, err := r.Resolve(ctx, ref)
		if err != nil {
			return "", fmt.Errorf("login %s: %w", what, err)
		}
		return v, nil
	}
	for _, f := range l.Fields {
		v := f.Value
		if f.Secret != "" {
			if v, err = read("field "+f.Name, f.Secret); err != nil {
				return nil, err
			}
		}
		out.Form.Add(f.Name, v)
	}
	for name, raw := range l.SecretHeaders {
		v, err := read("header "+name, raw)
		if err != nil {
			return nil, err
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("login header %s: the value of %s is not one line", name, raw)
		}
		out.Header.Set(name, v)
		out.Secret = append(out.Secret, name)
	}
	for name := range out.Header {
		if IsSecretHeader(name) && !slices.Contains(out.Secret, name) {
			out.Secret = append(out.Secret, name)
		}
	}
	return out, nil
}

// ReadLogins reads the secrets of the spec's logins with r, so that LoginFor gives each host's
// request (specstore does, with the crawl's secret headers). An error names the host rule and the
// reference, never a value.
func (c *Crawl) ReadLogins(ctx context.Context, r secretref.Resolver) error {
	if c.Spec == nil {
		return nil
	}
	c.logins = make([]*LoginRequest, len(c.Spec.Hosts))
	for i, h := range c.Spec.Hosts {
		if h.Login == nil {
			continue
		}
		l, err := loginOf(ctx, h.Login, r)
		if err != nil {
			c.loginErr = fmt.Errorf("hosts: %s: %w", h.Pattern, err)
			continue
		}
		c.logins[i] = l
	}
	return nil
}

// LoginFor is host's login request (nil: its rule has none), or why it cannot be sent (its
// secrets could not be read).
func (c *Crawl) LoginFor(host string) (*LoginRequest, error) {
	if c == nil || c.Spec == nil {
		return nil, nil
	}
	for i, r := range c.Spec.Hosts {
		if !r.Pattern.Match(host) {
			continue
		}
		if r.Login == nil {
			return nil, nil
		}
		if i < len(c.logins) && c.logins[i] != nil {
			return c.logins[i], nil
		}
		if c.loginErr != nil {
			return nil, c.loginErr
		}
		return nil, fmt.Errorf("hosts: %s: the login's secrets are not read (%w)", r.Pattern, secretref.ErrNoReader)
	}
	return nil, nil
}
