package crawlspec

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
)

// MaxBytes bounds a spec file.
const MaxBytes = 1 << 20

// Parse reads a spec file and checks it against bounds. Its error is Errors, every problem of the
// file with its line, or a single Error for a file that is not YAML or JSON at all.
func Parse(body []byte, bounds Bounds) (*Spec, error) {
	if len(body) > MaxBytes {
		return nil, Errors{{Msg: fmt.Sprintf("the spec is %d bytes, over the %d-byte limit: put long seed lists in a URL list file", len(body), MaxBytes)}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return nil, Errors{syntaxError(err)}
	}
	d := &decoder{localSecrets: bounds.LocalSecrets, maxTries: bounds.MaxTries, secrets: bounds.Secrets}
	s := &Spec{}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		line := 1
		if len(doc.Content) > 0 {
			line = doc.Content[0].Line
		}
		return nil, Errors{{Line: line, Msg: "a spec is a mapping of settings (version: 1, seeds: [...], ...)"}}
	}
	root := doc.Content[0]
	d.spec(root, s)
	d.bounds(root, s, bounds)
	if len(d.errs) > 0 {
		sort.SliceStable(d.errs, func(i, j int) bool { return d.errs[i].Line < d.errs[j].Line })
		return nil, d.errs
	}
	return s, nil
}

// syntaxError turns a YAML syntax error ("yaml: line 3: ...") into an Error with its line.
func syntaxError(err error) Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(n); err == nil {
				line, msg = l, after
			}
		}
	}
	return Error{Line: line, Msg: "not YAML or JSON: " + msg}
}

type decoder struct {
	errs Errors
	// localSecrets allows env: and file: references of secret headers (Bounds.LocalSecrets).
	localSecrets bool
	// maxTries bounds the tries of the retry section (Bounds.MaxTries; 0: none).
	maxTries int
	// secrets are the names a deployed stack may read (Bounds.Secrets).
	secrets secretref.Allowed
}

func (d *decoder) fail(n *yaml.Node, key, format string, args ...any) {
	d.errs = append(d.errs, Error{Line: n.Line, Column: n.Column, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// mapping walks the keys of n, a mapping, calling the handler of each key; an unknown or repeated
// key is an error.
func (d *decoder) mapping(n *yaml.Node, key string, keys map[string]func(k, v *yaml.Node)) {
	d.mappingAny(n, key, func(k, v *yaml.Node) {
		fn, ok := keys[k.Value]
		if !ok {
			d.fail(k, join(key, k.Value), "unknown setting (known: %s)", known(keys))
			return
		}
		fn(k, v)
	})
}

func known(keys map[string]func(k, v *yaml.Node)) string {
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func join(parent, key string) string {
	if parent == "" || key == "" {
		return parent + key
	}
	return parent + "." + key
}

func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!null":
		return "nothing"
	case "!!str":
		return fmt.Sprintf("the string %q", n.Value)
	}
	return fmt.Sprintf("%s %s", strings.TrimPrefix(n.Tag, "!!"), n.Value)
}

func (d *decoder) str(n *yaml.Node, key string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.fail(n, key, "want a string, got %s", kindOf(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) integer(n *yaml.Node, key string, lo int) (*int, bool) {
	var v int
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || n.Decode(&v) != nil {
		d.fail(n, key, "want a whole number, got %s", kindOf(n))
		return nil, false
	}
	if v < lo {
		d.fail(n, key, "%d: want %d or more", v, lo)
		return nil, false
	}
	return &v, true
}

func (d *decoder) boolean(n *yaml.Node, key string) (bool, bool) {
	var v bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&v) != nil {
		d.fail(n, key, "want true or false, got %s", kindOf(n))
		return false, false
	}
	return v, true
}

// spec reads the top level of a spec.
func (d *decoder) spec(root *yaml.Node, s *Spec) {
	var versionSet, seedsSet bool
	d.mapping(root, "", map[string]func(k, v *yaml.Node){
		"version": func(k, v *yaml.Node) {
			versionSet = true
			if n, ok := d.integer(v, "version", 0); ok {
				if *n != Version {
					d.fail(v, "version", "schema version %d: this crawler reads version %d", *n, Version)
				}
				s.Version = *n
			}
		},
		"seeds": func(k, v *yaml.Node) { seedsSet = true; d.seeds(v, s) },
		"scope": func(k, v *yaml.Node) {
			if str, ok := d.str(v, "scope"); ok {
				m, err := scope.ParseMode(str)
				if err != nil {
					d.fail(v, "scope", "%q: want host, domain or any", str)
				}
				s.Scope = m
			}
		},
		"include": func(k, v *yaml.Node) { s.Include = d.patterns(v, "include") },
		"exclude": func(k, v *yaml.Node) { s.Exclude = d.patterns(v, "exclude") },
		"max_depth": func(k, v *yaml.Node) {
			s.MaxDepth, _ = d.integer(v, "max_depth", 0)
		},
		"max_pages":          func(k, v *yaml.Node) { s.MaxPages, _ = d.integer(v, "max_pages", 1) },
		"max_pages_per_host": func(k, v *yaml.Node) { s.MaxPagesPerHost, _ = d.integer(v, "max_pages_per_host", 1) },
		"rate":               func(k, v *yaml.Node) { s.Rate = d.rateAt(v, "rate") },
		"user_agent": func(k, v *yaml.Node) {
			if ua, ok := d.str(v, "user_agent"); ok {
				ua = strings.TrimSpace(ua)
				switch {
				case robots.ProductToken(ua) == "":
					d.fail(v, "user_agent", "%q: want a product token first, such as \"mybot/1.0 (+https://example.com/bot)\"", ua)
				case len(ua) > 512 || strings.ContainsAny(ua, "\r\n"):
					d.fail(v, "user_agent", "want one line of at most 512 bytes")
				default:
					s.UserAgent = ua
				}
			}
		},
		"tls_fingerprint": func(k, v *yaml.Node) {
			if fp, ok := d.str(v, "tls_fingerprint"); ok {
				if fp != FingerprintChrome && fp != FingerprintGo {
					d.fail(v, "tls_fingerprint", "%q: want %s (Chrome's ClientHello, HTTP/2 when the server chooses it) or %s (Go's own)",
						fp, FingerprintChrome, FingerprintGo)
				} else {
					s.TLSFingerprint = fp
				}
			}
		},
		"headers": func(k, v *yaml.Node) { s.Headers, s.SecretHeaders = d.headersAt(v, "headers") },
		"recrawl": func(k, v *yaml.Node) {
			if b, ok := d.boolean(v, "recrawl"); ok {
				s.Recrawl = &b
			}
		},
		"extract": func(k, v *yaml.Node) { s.Extract = d.fields(v, "extract") },
		"items":   func(k, v *yaml.Node) { s.Items = d.items(v) },
		"sitemaps": func(k, v *yaml.Node) {
			s.Sitemaps, _ = d.boolean(v, "sitemaps")
		},
		"retry":    func(k, v *yaml.Node) { s.Retry = d.retrySection(v) },
		"render":   func(k, v *yaml.Node) { s.Render = d.renderSection(v) },
		"hosts":    func(k, v *yaml.Node) { s.Hosts = d.hosts(v) },
		"priority": func(k, v *yaml.Node) { s.Priority = d.priority(v) },
		"keep":     func(k, v *yaml.Node) { s.Keep = d.keep(v) },
		"parse":    func(k, v *yaml.Node) { s.Parse = d.parseKinds(v) },
	})
	if !versionSet {
		d.fail(root, "version", "missing: a spec starts with version: %d", Version)
	}
	if !seedsSet {
		d.fail(root, "seeds", "missing: a spec needs at least one seed URL")
	}
}

func (d *decoder) seeds(n *yaml.Node, s *Spec) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, "seeds", "want a list of at least one URL, got %s", kindOf(n))
		return
	}
	if len(n.Content) > MaxSeeds {
		d.fail(n, "seeds", "%d seeds, over the limit of %d: put long seed lists in a URL list file", len(n.Content), MaxSeeds)
		return
	}
	for _, e := range n.Content {
		raw, ok := d.str(e, "seeds")
		if !ok {
			continue
		}
		u, err := urlnorm.Normalize(raw)
		if err != nil {
			d.fail(e, "seeds", "%q: %v", urlnorm.Redact(raw), err)
			continue
		}
		s.Seeds = append(s.Seeds, u.String())
	}
}

func (d *decoder) patterns(n *yaml.Node, key string) []string {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, key, "want a list of regexps, got %s", kindOf(n))
		return nil
	}
	var out []string
	for _, e := range n.Content {
		p, ok := d.str(e, key)
		if !ok {
			continue
		}
		if _, err := regexp.Compile(p); err != nil || strings.TrimSpace(p) == "" {
			if err == nil {
				err = errors.New("empty pattern")
			}
			d.fail(e, key, "%q: %v", p, err)
			continue
		}
		out = append(out, p)
	}
	return out
}

func (d *decoder) rateAt(n *yaml.Node, key string) *float64 {
	var v float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") || n.Decode(&v) != nil {
		d.fail(n, key, "want requests per second per host, such as 0.5, got %s", kindOf(n))
		return nil
	}
	if !(v > 0) || math.IsInf(v, 0) {
		d.fail(n, key, "%v: want more than 0 requests per second", v)
		return nil
	}
	return &v
}

// headersAt reads the headers at key at: a value given as {secret: REF} is a secret header, kept as its
// reference (secretref); a header that holds credentials (SecretHeaders) must be given so. No
// error quotes a header's value.
func (d *decoder) headersAt(n *yaml.Node, at string) (http.Header, map[string]string) {
	h := http.Header{}
	secrets := map[string]string{}
	size := 0
	d.mappingAny(n, at, func(k, v *yaml.Node) {
		key := join(at, k.Value)
		name := http.CanonicalHeaderKey(k.Value)
		switch {
		case !validToken(k.Value):
			d.fail(k, key, "not a header name")
			return
		case forbiddenHeaders[name] != "":
			d.fail(k, key, "a spec may not set %s: %s", name, forbiddenHeaders[name])
			return
		case v.Kind == yaml.MappingNode:
			if ref, ok := d.secretRef(v, key); ok {
				size += len(name) + len(ref)
				secrets[name] = ref
			}
			return
		case IsSecretHeader(name) && v.Kind == yaml.ScalarNode:
			d.fail(v, key, "%s holds credentials: give a reference to its value, not the value: {secret: \"ssm:<parameter>\"} or {secret: \"secretsmanager:<secret>\"}%s (docs/spec.md)",
				name, d.localKinds())
			return
		}
		val, ok := d.str(v, key)
		switch {
		case !ok:
		case strings.ContainsAny(val, "\r\n\x00"):
			d.fail(v, key, "a header value is one line")
		default:
			size += len(name) + len(val)
			h.Set(name, val)
		}
	})
	if len(h)+len(secrets) > MaxHeaders || size > MaxHeaderBytes {
		d.fail(n, at, "%d headers of %d bytes, over the limit of %d headers and %d bytes", len(h)+len(secrets), size, MaxHeaders, MaxHeaderBytes)
	}
	if len(secrets) == 0 {
		secrets = nil
	}
	return h, secrets
}

// secretRef reads a secret header's {secret: REF}.
func (d *decoder) secretRef(n *yaml.Node, key string) (string, bool) {
	var ref string
	found := false
	d.mapping(n, key, map[string]func(k, v *yaml.Node){
		"secret": func(k, v *yaml.Node) {
			s, ok := d.str(v, join(key, "secret"))
			if !ok {
				return
			}
			r, err := secretref.Parse(s, d.localSecrets)
			if err == nil && !d.localSecrets {
				err = d.secrets.Check(r) // on the stack, what its fetch function is granted
			}
			if err != nil {
				d.fail(v, join(key, "secret"), "%v", err)
				return
			}
			ref, found = strings.TrimSpace(s), true
		},
	})
	if !found && len(n.Content) == 0 {
		d.fail(n, key, "want {secret: REFERENCE}")
	}
	return ref, found
}

// localKinds names the references only crawl run reads, when the spec may use them.
func (d *decoder) localKinds() string {
	if d.localSecrets {
		return ", or locally {secret: \"env:<variable>\"} or {secret: \"file:<path>\"}"
	}
	return ""
}

// mappingAny walks a mapping whose keys are the user's own (header names, field names).
func (d *decoder) mappingAny(n *yaml.Node, key string, fn func(k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		d.fail(n, key, "want a mapping, got %s", kindOf(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if seen[k.Value] {
			d.fail(k, join(key, k.Value), "set twice")
			continue
		}
		seen[k.Value] = true
		fn(k, n.Content[i+1])
	}
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}
