package secretref

import (
	"context"
	"fmt"
	"strings"
)

// The stack's settings that name what its fetch function may read, as the errors name them: the
// CDK context key and the functions' variable.
const (
	SettingSSM            = "secretHeaderParameterPrefix (CRAWL_SECRET_HEADER_SSM_PREFIX)"
	SettingSecretsManager = "secretHeaderSecretPrefix (CRAWL_SECRET_HEADER_SECRETS_PREFIX)"
)

// Allowed are the name prefixes of the SSM parameters and Secrets Manager secrets that a deployed
// stack's fetch function is granted to read for secret headers: its role may read those and no
// other. An empty prefix allows none of its kind, as the stack then grants none.
type Allowed struct {
	SSM            string // a parameter name prefix, such as "/crawlstack/headers/"
	SecretsManager string // a secret name prefix, such as "crawlstack/headers/"
}

// Any says whether a is set for either kind.
func (a Allowed) Any() bool { return a.SSM != "" || a.SecretsManager != "" }

// Check says why the stack may not read r, or nil when it may: r's name (or, for an ARN, the name
// in it) must start with the prefix of its kind. Its message names the setting to change.
func (a Allowed) Check(r Ref) error {
	prefix, setting, name := a.SSM, SettingSSM, r.Name
	switch r.Kind {
	case KindSSM:
		if _, rest, ok := strings.Cut(name, ":parameter"); ok && strings.HasPrefix(name, "arn:") {
			name = rest // "arn:...:parameter/a/b" names "/a/b"
		}
	case KindSecretsManager:
		prefix, setting = a.SecretsManager, SettingSecretsManager
		if _, rest, ok := strings.Cut(name, ":secret:"); ok && strings.HasPrefix(name, "arn:") {
			name = rest // "arn:...:secret:a/b-AbCdEf" names "a/b-AbCdEf"
		}
	default:
		return fmt.Errorf("secret %s: the stack reads ssm: and secretsmanager: references only", r)
	}
	switch {
	case prefix == "":
		return fmt.Errorf("secret %s: this stack reads no %s for secret headers: set the stack's %s to the prefix of the names specs may use (docs/deploy.md)",
			r, kindNoun(r.Kind), setting)
	case !strings.HasPrefix(name, prefix) || strings.Contains(name[len(prefix):], ".."):
		return fmt.Errorf("secret %s: not under %q, the stack's %s: its fetch function may read no other",
			r, prefix, setting)
	}
	return nil
}

func kindNoun(kind string) string {
	if kind == KindSSM {
		return "SSM parameters"
	}
	return "Secrets Manager secrets"
}

// Held reads only the references that Allowed allows, with Resolver: what a deployed fetch
// function reads secret headers with, so that a spec stored before the stack's setting changed
// is refused with the setting's name rather than by IAM.
type Held struct {
	Allowed  Allowed
	Resolver Resolver
}

// Resolve checks r, then reads it.
func (h Held) Resolve(ctx context.Context, r Ref) (string, error) {
	if err := h.Allowed.Check(r); err != nil {
		return "", err
	}
	return h.Resolver.Resolve(ctx, r)
}
