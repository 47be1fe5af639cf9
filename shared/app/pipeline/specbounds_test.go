package pipeline

import (
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
)

// A stack that fetches through proxies refuses a spec asking for the chrome TLS fingerprint, which
// would otherwise fail every request of the crawl as internal: proxies given as URLs or by their
// secret.
func TestASpecAskingForChromeThroughProxiesIsRefused(t *testing.T) {
	spec := []byte("version: 1\nseeds: [http://127.0.0.1/]\ntls_fingerprint: chrome\n")
	for name, c := range map[string]Config{
		"proxies":        {Proxies: []string{"http://127.0.0.1:3128"}},
		"proxies secret": {ProxiesSecret: "ssm:/crawl/proxies"},
	} {
		_, err := crawlspec.Parse(spec, c.SpecBounds())
		if err == nil || !strings.Contains(err.Error(), "does not go through the proxies") {
			t.Errorf("%s: %v, want the spec refused", name, err)
		}
	}
	if _, err := crawlspec.Parse(spec, Config{}.SpecBounds()); err != nil {
		t.Errorf("no proxies: %v, want the spec taken", err)
	}
}

// On a deployed stack (the functions' environment) a spec's secret header must name a parameter or
// secret under the prefix the stack grants its fetch function; with none set, the spec is refused
// with a message that names the setting. crawl run (LocalSecrets) reads what its user may.
func TestSecretHeadersAreHeldToTheStacksPrefixes(t *testing.T) {
	spec := func(ref string) []byte {
		return []byte("version: 1\nseeds: [http://127.0.0.1/]\nheaders:\n  Authorization: {secret: \"" + ref + "\"}\n")
	}
	base := map[string]string{"SCHEDULE_QUEUE_URL": "s", "FETCH_QUEUE_URL": "f", "PARSE_QUEUE_URL": "p"}
	for _, tt := range []struct {
		name string
		env  map[string]string
		ref  string
		want string // "" accepted; else a part of the refusal
	}{
		{"no setting, ssm", nil, "ssm:/crawlstack/headers/token", "secretHeaderParameterPrefix"},
		{"no setting, secrets manager", nil, "secretsmanager:crawlstack/headers/cookie", "secretHeaderSecretPrefix"},
		{"ssm under the prefix", map[string]string{"CRAWL_SECRET_HEADER_SSM_PREFIX": "/crawlstack/headers/"}, "ssm:/crawlstack/headers/token", ""},
		{"ssm ARN under the prefix", map[string]string{"CRAWL_SECRET_HEADER_SSM_PREFIX": "/crawlstack/headers/"},
			"ssm:arn:aws:ssm:us-east-1:123456789012:parameter/crawlstack/headers/token", ""},
		{"ssm outside the prefix", map[string]string{"CRAWL_SECRET_HEADER_SSM_PREFIX": "/crawlstack/headers/"}, "ssm:/crawlstack/other", "not under"},
		{"ssm climbing out", map[string]string{"CRAWL_SECRET_HEADER_SSM_PREFIX": "/crawlstack/headers/"}, "ssm:/crawlstack/headers/../db", "not under"},
		{"secrets manager with only the ssm prefix", map[string]string{"CRAWL_SECRET_HEADER_SSM_PREFIX": "/crawlstack/headers/"},
			"secretsmanager:crawlstack/headers/cookie", "secretHeaderSecretPrefix"},
		{"secrets manager under the prefix", map[string]string{"CRAWL_SECRET_HEADER_SECRETS_PREFIX": "crawlstack/headers/"}, "secretsmanager:crawlstack/headers/cookie", ""},
		{"secrets manager ARN under the prefix", map[string]string{"CRAWL_SECRET_HEADER_SECRETS_PREFIX": "crawlstack/headers/"},
			"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:crawlstack/headers/cookie-AbCdEf", ""},
		{"secrets manager ARN outside", map[string]string{"CRAWL_SECRET_HEADER_SECRETS_PREFIX": "crawlstack/headers/"},
			"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:db/password-AbCdEf", "not under"},
		{"env on the stack", map[string]string{"CRAWL_SECRET_HEADER_SSM_PREFIX": "/crawlstack/headers/"}, "env:TOKEN", "crawl run only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromEnv(func(k string) string {
				if v, ok := tt.env[k]; ok {
					return v
				}
				return base[k]
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = crawlspec.Parse(spec(tt.ref), c.SpecBounds())
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%s: %v; want it taken", tt.ref, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("%s: %v; want it refused with %q", tt.ref, err, tt.want)
			}
		})
	}
	local := Config{LocalSecrets: true}
	if _, err := crawlspec.Parse(spec("ssm:/anywhere/token"), local.SpecBounds()); err != nil {
		t.Errorf("crawl run: %v; want any ssm: reference taken", err)
	}
}
