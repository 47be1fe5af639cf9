package crawlstack

import (
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The stack's proxy settings are spelled as the fetch function reads them.
func TestProxySettingsMatchTheFetcher(t *testing.T) {
	for file, wants := range map[string][]string{
		"../../shared/crawl/web/proxysecret/proxysecret.go": {`KindSSM            = "` + secretKindSSM + `"`, `KindSecretsManager = "` + secretKindSecretsManager + `"`},
		"../../shared/crawl/web/httpfetch/proxy.go":         {`RotatePerRequest = "request"`, `StickyPerHost = "host"`},
		"../../shared/app/pipeline/config.go":               {`"CRAWL_PROXIES"`, `"CRAWL_PROXY_ROTATION"`, `"CRAWL_PROXIES_SECRET"`},
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range wants {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s has no %s: the stack's setting and the fetch function's differ", file, want)
			}
		}
	}
}

// proxiesSecret grants the fetch functions (fetch and the slow lane's fetchslow), and only them, the read of that one parameter or
// secret, besides exactly what it has without; a stack without it grants none (TestLeastPrivilege
// holds the default stack's roles to their lists). The functions get the reference, never a value.
func TestProxiesSecretIsGrantedToTheFetchersAlone(t *testing.T) {
	base := map[string]map[string]bool{}
	_, plain := synthWith(t, map[string]any{"runUrls": "10", "proxies": "http://proxy.example:3128"})
	for _, fn := range []string{"Schedule", "Fetch", "Fetchslow", "Parse"} {
		base[fn] = rolePermissionsIn(t, plain, fn+"FunctionServiceRole")
	}
	for _, tt := range []struct {
		ref, grant string
	}{
		{"ssm:/crawl/proxies", "ssm:GetParameter arn:AWS::Partition:ssm:AWS::Region:AWS::AccountId:parameter/crawl/proxies"},
		{"secretsmanager:crawl-proxies", "secretsmanager:GetSecretValue arn:AWS::Partition:secretsmanager:AWS::Region:AWS::AccountId:secret:crawl-proxies-??????"},
		{"secretsmanager:arn:aws:secretsmanager:eu-west-1:123456789012:secret:p-AbCdEf",
			"secretsmanager:GetSecretValue arn:aws:secretsmanager:eu-west-1:123456789012:secret:p-AbCdEf"},
	} {
		t.Run(tt.ref, func(t *testing.T) {
			_, parsed := synthWith(t, map[string]any{"runUrls": "10", "proxies": "http://proxy.example:3128", "proxiesSecret": tt.ref})
			for _, fn := range []string{"Schedule", "Fetch", "Fetchslow", "Parse"} {
				got := rolePermissionsIn(t, parsed, fn+"FunctionServiceRole")
				want := maps.Clone(base[fn])
				if fn == "Fetch" || fn == "Fetchslow" { // the slow lane runs fetch's handler
					want[tt.grant] = true
				}
				samePermissions(t, fn, got, want)
			}
			for id, env := range crawlFunctionEnvs(parsed) {
				if env["CRAWL_PROXIES_SECRET"] != tt.ref || env["CRAWL_PROXIES"] != "http://proxy.example:3128" {
					t.Errorf("%s's environment: CRAWL_PROXIES_SECRET %v, CRAWL_PROXIES %v; want the reference and the proxy",
						id, env["CRAWL_PROXIES_SECRET"], env["CRAWL_PROXIES"])
				}
			}
		})
	}
}

// Bad proxy settings are refused with a message that names the setting and shows no password.
func TestBadProxySettings(t *testing.T) {
	for _, tt := range []struct {
		ctx  map[string]any
		want string
	}{
		{map[string]any{"proxies": "http://user:pw-SECRET@proxy.example:3128"}, "proxiesSecret"},
		{map[string]any{"proxies": "ftp://proxy.example:21"}, "socks5://"},
		{map[string]any{"proxies": "http://proxy.example"}, "host:port"},
		{map[string]any{"proxyRotation": "random"}, `"proxyRotation"`},
		{map[string]any{"proxiesSecret": "/crawl/proxies"}, `"proxiesSecret"`},
		{map[string]any{"proxiesSecret": "ssm:/crawl/proxies", "tlsFingerprint": "chrome"}, "do not go together"},
	} {
		_, err := ConfigFromContext(func(key string) any { return tt.ctx[key] })
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "pw-SECRET") {
			t.Errorf("context %v: error %v; want one that says %q and shows no password", tt.ctx, err, tt.want)
		}
	}
}

// Every malformed proxy URL of the shared corpus (shared/testkit/proxycorpus) is refused in the
// proxies setting, and the password is in no message; none reaches a template, since a refused
// context synthesizes none.
func TestBadProxiesNeverShowTheirPassword(t *testing.T) {
	const marker = "PWMARK-s3cret"
	b, err := os.ReadFile("../../shared/testkit/proxycorpus/bad-proxies.txt")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		raw, err := strconv.Unquote(line)
		if err != nil || !strings.Contains(raw, marker) {
			t.Fatalf("corpus line %q: want a Go-quoted URL holding %s", line, marker)
		}
		n++
		_, err = ConfigFromContext(func(key string) any { return map[string]any{"proxies": raw}[key] })
		if err == nil || !strings.Contains(err.Error(), "proxies") || strings.Contains(err.Error(), marker) {
			t.Errorf("proxies %q: error %v; want one that names the setting and not the password", raw, err)
		}
	}
	if n < 10 {
		t.Fatalf("the corpus holds %d URLs: want it read", n)
	}
}
