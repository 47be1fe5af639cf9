package crawlstack

import (
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// Secret headers on the stack: a crawl spec may give a header by reference to an SSM parameter
// or a Secrets Manager secret (docs/spec.md), read by the fetch function. secretHeaderParameterPrefix
// and secretHeaderSecretPrefix name the prefixes such names must start with: the fetch function
// alone is granted the read of names under them, the schedule function refuses a spec that names
// any other, and with neither set there is no grant and a spec that names a secret is refused
// (shared/crawl/secretref.Allowed, which spells the settings as the errors name them).

// The characters of a prefix: those of an SSM parameter name and of a Secrets Manager secret name.
// No IAM wildcard (* ?) may widen the grant.
var (
	ssmPrefixChars    = regexp.MustCompile(`^[A-Za-z0-9_.\-/]+$`)
	secretPrefixChars = regexp.MustCompile(`^[A-Za-z0-9/_+=.@\-]+$`)
)

// checkSecretHeaders checks the two prefixes: names' characters, no "..", and more than "/".
func checkSecretHeaders(c Config, bad func(key, format string, args ...any)) {
	for _, p := range []struct {
		key, v string
		chars  *regexp.Regexp
	}{
		{"secretHeaderParameterPrefix", c.SecretHeaderParameterPrefix, ssmPrefixChars},
		{"secretHeaderSecretPrefix", c.SecretHeaderSecretPrefix, secretPrefixChars},
	} {
		if p.v == "" {
			continue
		}
		if !p.chars.MatchString(p.v) || strings.Contains(p.v, "..") || strings.Trim(p.v, "/") == "" {
			bad(p.key, "must be the start of the names crawl specs may name, such as /crawlstack/headers/ (a name's own characters, no wildcard, no .., more than /), got %q", p.v)
		}
	}
}

// secretHeadersEnv is the functions' environment of the prefixes (none when unset): schedule
// checks specs against them, fetch reads under them.
func secretHeadersEnv(cfg Config) map[string]string {
	env := map[string]string{}
	if cfg.SecretHeaderParameterPrefix != "" {
		env["CRAWL_SECRET_HEADER_SSM_PREFIX"] = cfg.SecretHeaderParameterPrefix
	}
	if cfg.SecretHeaderSecretPrefix != "" {
		env["CRAWL_SECRET_HEADER_SECRETS_PREFIX"] = cfg.SecretHeaderSecretPrefix
	}
	return env
}

// grantSecretHeaders lets fetch read the parameters and secrets under the prefixes, and nothing
// when they are unset. As for proxiesSecret, a customer managed key needs kms:Decrypt from the
// key's own policy (docs/deploy.md).
func grantSecretHeaders(cfg Config, fetch awslambda.Function) {
	stack := awscdk.Stack_Of(fetch)
	if p := cfg.SecretHeaderParameterPrefix; p != "" {
		fetch.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("ssm:GetParameter"),
			Resources: jsii.Strings(*stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ssm"), Resource: jsii.String("parameter"),
				ResourceName: jsii.String(strings.TrimPrefix(p, "/") + "*"), ArnFormat: awscdk.ArnFormat_SLASH_RESOURCE_NAME})),
		}))
	}
	if p := cfg.SecretHeaderSecretPrefix; p != "" {
		fetch.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("secretsmanager:GetSecretValue"),
			Resources: jsii.Strings(*stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("secretsmanager"), Resource: jsii.String("secret"),
				ResourceName: jsii.String(p + "*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})),
		}))
	}
}
