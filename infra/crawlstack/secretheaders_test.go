package crawlstack

import (
	"maps"
	"os"
	"strings"
	"testing"
)

// The stack's secret-header settings are spelled as the functions read them and as their errors
// name them.
func TestSecretHeaderSettingsMatchTheFunctions(t *testing.T) {
	for file, wants := range map[string][]string{
		"../../shared/app/pipeline/config.go":     {`"CRAWL_SECRET_HEADER_SSM_PREFIX"`, `"CRAWL_SECRET_HEADER_SECRETS_PREFIX"`},
		"../../shared/crawl/secretref/allowed.go": {`"secretHeaderParameterPrefix (CRAWL_SECRET_HEADER_SSM_PREFIX)"`, `"secretHeaderSecretPrefix (CRAWL_SECRET_HEADER_SECRETS_PREFIX)"`},
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range wants {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s has no %s: the stack's setting and the functions' differ", file, want)
			}
		}
	}
}

// The prefixes grant the fetch function, and only it, the read of the names under them, besides
// exactly what it has without; the default stack grants none (TestLeastPrivilege holds its roles
// to their lists), and every function gets the prefixes (schedule checks specs against them).
func TestSecretHeaderPrefixesAreGrantedToTheFetchersAlone(t *testing.T) {
	base := map[string]map[string]bool{}
	_, plain := synthWith(t, map[string]any{"runUrls": "10"})
	for _, fn := range []string{"Schedule", "Fetch", "Fetchslow", "Parse"} {
		base[fn] = rolePermissionsIn(t, plain, fn+"FunctionServiceRole")
	}
	for _, tt := range []struct {
		name   string
		ctx    map[string]any
		grants []string
		env    map[string]string
	}{
		{"ssm", map[string]any{"secretHeaderParameterPrefix": "/crawlstack/headers/"},
			[]string{"ssm:GetParameter arn:AWS::Partition:ssm:AWS::Region:AWS::AccountId:parameter/crawlstack/headers/*"},
			map[string]string{"CRAWL_SECRET_HEADER_SSM_PREFIX": "/crawlstack/headers/"}},
		{"both", map[string]any{"secretHeaderParameterPrefix": "/crawlstack/headers/", "secretHeaderSecretPrefix": "crawlstack/headers/"},
			[]string{"ssm:GetParameter arn:AWS::Partition:ssm:AWS::Region:AWS::AccountId:parameter/crawlstack/headers/*",
				"secretsmanager:GetSecretValue arn:AWS::Partition:secretsmanager:AWS::Region:AWS::AccountId:secret:crawlstack/headers/*"},
			map[string]string{"CRAWL_SECRET_HEADER_SSM_PREFIX": "/crawlstack/headers/", "CRAWL_SECRET_HEADER_SECRETS_PREFIX": "crawlstack/headers/"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, parsed := synthWith(t, withLane(tt.ctx))
			for _, fn := range []string{"Schedule", "Fetch", "Fetchslow", "Parse"} {
				got := rolePermissionsIn(t, parsed, fn+"FunctionServiceRole")
				want := maps.Clone(base[fn])
				if fn == "Fetch" || fn == "Fetchslow" { // the slow lane runs fetch's handler
					for _, g := range tt.grants {
						want[g] = true
					}
				}
				samePermissions(t, fn, got, want)
			}
			envs := crawlFunctionEnvs(parsed)
			if len(envs) != 4 {
				t.Fatalf("%d crawl functions' environments; want 4 (with the slow lane, runUrls 10)", len(envs))
			}
			for id, env := range envs {
				for _, k := range []string{"CRAWL_SECRET_HEADER_SSM_PREFIX", "CRAWL_SECRET_HEADER_SECRETS_PREFIX"} {
					if got, want := env[k], tt.env[k]; (want == "" && got != nil) || (want != "" && got != want) {
						t.Errorf("%s's %s is %v; want %q", id, k, got, want)
					}
				}
			}
		})
	}
	for _, env := range crawlFunctionEnvs(plain) {
		if env["CRAWL_SECRET_HEADER_SSM_PREFIX"] != nil || env["CRAWL_SECRET_HEADER_SECRETS_PREFIX"] != nil {
			t.Errorf("the default stack sets a prefix: %v", env)
		}
	}
}

// A prefix that would widen the grant (a wildcard, "/", "..") or is not a name is refused, naming
// the setting.
func TestBadSecretHeaderPrefixes(t *testing.T) {
	for _, tt := range []struct{ key, v string }{
		{"secretHeaderParameterPrefix", "/"},
		{"secretHeaderParameterPrefix", "/crawlstack/*"},
		{"secretHeaderParameterPrefix", "/crawlstack/../db/"},
		{"secretHeaderParameterPrefix", "/crawl stack/"},
		{"secretHeaderSecretPrefix", "crawlstack?"},
		{"secretHeaderSecretPrefix", "///"},
	} {
		_, err := ConfigFromContext(func(key string) any { return map[string]any{tt.key: tt.v}[key] })
		if err == nil || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%s=%q: %v; want a refusal that names the setting", tt.key, tt.v, err)
		}
	}
	if _, err := ConfigFromContext(func(key string) any {
		return map[string]any{"secretHeaderParameterPrefix": "/crawlstack/headers/", "secretHeaderSecretPrefix": "crawlstack/headers/"}[key]
	}); err != nil {
		t.Errorf("good prefixes: %v", err)
	}
}
