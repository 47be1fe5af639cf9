package crawlstack

import (
	"net/url"
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

// checkProxies checks proxies, proxyRotation and proxiesSecret. No message quotes a password.
func checkProxies(c Config, bad func(key, format string, args ...any)) {
	for i, p := range proxyList(c.Proxies) {
		u, err := url.Parse(p)
		switch {
		case err != nil:
			bad("proxies", "proxy %d is not a URL", i+1)
		case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5":
			bad("proxies", "proxy %s: want an http://, https:// or socks5:// URL", u.Redacted())
		case u.Hostname() == "" || u.Port() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "":
			bad("proxies", "proxy %s: want scheme://host:port", u.Redacted())
		case u.User != nil:
			bad("proxies", "proxy %s holds credentials, which would sit in the functions' settings: list it in proxiesSecret "+
				"(an SSM SecureString or a Secrets Manager secret) instead", u.Redacted())
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
