package crawlstack

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// Proxies on the stack: proxies lists proxy URLs without credentials, proxiesSecret names an SSM
// parameter or a Secrets Manager secret that lists them with theirs (shared/crawl/web/proxysecret reads it
// in the fetch function, which alone is granted its read, and only when it is set).

// The kinds of proxiesSecret reference and the rotations, as shared/crawl/web/proxysecret and
// shared/crawl/web/httpfetch spell them (infra is a module of its own).
const (
	secretKindSSM            = "ssm"
	secretKindSecretsManager = "secretsmanager"
)

// checkProxies checks proxies, proxyRotation and proxiesSecret. No message quotes a password, or
// any part of a proxy URL that might be one: they name a proxy by its scheme, host and port alone
// (proxyName).
func checkProxies(c Config, bad func(key, format string, args ...any)) {
	for _, p := range proxyList(c.Proxies) {
		if why := proxyProblem(p); why != "" {
			bad("proxies", "proxy %s: %s", proxyName(p), why)
		}
	}
	if r := c.ProxyRotation; r != "" && r != "request" && r != "host" {
		bad("proxyRotation", "must be request (the proxies take turns) or host (a host's requests through one), got %q", r)
	}
	if c.ProxiesSecret != "" {
		if _, _, ok := secretRef(c.ProxiesSecret); !ok {
			bad("proxiesSecret", "must be ssm:<parameter name> or secretsmanager:<secret name or ARN>, got %q", c.ProxiesSecret)
		}
	}
	if (c.Proxies != "" || c.ProxiesSecret != "") && c.TLSFingerprint == fingerprintChrome {
		bad("tlsFingerprint", "proxies and the chrome TLS fingerprint do not go together yet: use one or the other")
	}
}

// proxyProblem says what is wrong with a proxy URL of the proxies setting, or "" when nothing is.
// It is as strict as the fetch function's parser (httpfetch.ParseProxy, which infra, a module of
// its own, cannot import; TestBadProxiesNeverShowTheirPassword throws the same corpus at both):
// scheme://host:port[/] and nothing else. net/url alone would read "http://bob:12#pw@proxy:3128"
// as host bob, port 12, and let the password into the functions' environment.
func proxyProblem(p string) string {
	scheme, rest, ok := strings.Cut(p, "://")
	switch {
	case !ok:
		return "not a URL of the form scheme://host:port"
	case scheme != "http" && scheme != "https" && scheme != "socks5":
		return "want an http://, https:// or socks5:// URL"
	case strings.Contains(rest, "@"):
		return "holds credentials (or an @), which would sit in the functions' settings: list it in proxiesSecret " +
			"(an SSM SecureString or a Secrets Manager secret) instead"
	case strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) || strings.ContainsAny(rest, "#?"):
		return "want scheme://host:port (a space, a control character, a fragment or a query is refused)"
	}
	authority, path, _ := strings.Cut(rest, "/")
	u, err := url.Parse(p)
	if path != "" || err != nil || u.Host != authority || u.Hostname() == "" {
		return "want scheme://host:port"
	}
	if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
		return "want scheme://host:port, with a port from 1 to 65535"
	}
	return ""
}

// proxyName is what a message may say of a proxy URL: its scheme when it is a short lower-case
// word, and the host and port after the last "@" (the whole authority when there is none), each
// only when it is plainly a host name, an IP address or a port number.
func proxyName(p string) string {
	scheme, rest, ok := strings.Cut(p, "://")
	if !ok {
		return "(not a URL)"
	}
	if len(scheme) > 10 || strings.ContainsFunc(scheme, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		scheme = "?"
	}
	hostport := rest[strings.LastIndex(rest, "@")+1:]
	if i := strings.IndexAny(hostport, "/?# \t\r\n"); i >= 0 {
		hostport = hostport[:i]
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	if net.ParseIP(host) == nil && (host == "" || len(host) > 253 || strings.ContainsFunc(host, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_')
	})) {
		host = "?"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		port = "?"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}

// proxyList splits the proxies setting at commas.
func proxyList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// secretRef splits "ssm:<name>" or "secretsmanager:<name or ARN>".
func secretRef(ref string) (kind, name string, ok bool) {
	kind, name, ok = strings.Cut(strings.TrimSpace(ref), ":")
	name = strings.TrimSpace(name)
	ok = ok && name != "" && !strings.ContainsAny(name, " \t\n") && (kind == secretKindSSM || kind == secretKindSecretsManager)
	return kind, name, ok
}

// proxiesEnv is the functions' environment of the proxy settings (none when unset).
func proxiesEnv(cfg Config) map[string]string {
	env := map[string]string{}
	if cfg.Proxies != "" {
		env["CRAWL_PROXIES"] = strings.Join(proxyList(cfg.Proxies), ",")
	}
	if cfg.ProxyRotation != "" {
		env["CRAWL_PROXY_ROTATION"] = cfg.ProxyRotation
	}
	if cfg.ProxiesSecret != "" {
		env["CRAWL_PROXIES_SECRET"] = strings.TrimSpace(cfg.ProxiesSecret)
	}
	return env
}

// grantProxiesSecret lets fetch read the one parameter or secret that proxiesSecret names, and
// nothing when it is unset. A SecureString or a secret encrypted with its service's AWS managed
// key needs no KMS grant; one under a customer managed key needs kms:Decrypt on that key, which
// the key's own policy must give (docs/deploy.md).
func grantProxiesSecret(cfg Config, fetch awslambda.Function) {
	kind, name, ok := secretRef(cfg.ProxiesSecret)
	if !ok {
		return
	}
	stack := awscdk.Stack_Of(fetch)
	action, arn := "ssm:GetParameter", name
	switch {
	case kind == secretKindSSM && !strings.HasPrefix(name, "arn:"):
		arn = *stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ssm"), Resource: jsii.String("parameter"),
			ResourceName: jsii.String(strings.TrimPrefix(name, "/")), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})
	case kind == secretKindSecretsManager:
		action = "secretsmanager:GetSecretValue"
		if !strings.HasPrefix(name, "arn:") {
			// A secret's ARN ends in a hyphen and six random characters after its name.
			arn = *stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("secretsmanager"), Resource: jsii.String("secret"),
				ResourceName: jsii.String(name + "-??????"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
		}
	}
	fetch.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(action),
		Resources: jsii.Strings(arn),
	}))
}
