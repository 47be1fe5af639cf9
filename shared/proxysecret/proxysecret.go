// Package proxysecret reads a deployed crawl's proxies, with their credentials, from AWS Systems
// Manager Parameter Store or AWS Secrets Manager, so that no password sits in the stack's
// settings, the function's environment or a log line. The fetch function reads them once, when
// it starts (CRAWL_PROXIES_SECRET); the stack grants it the read of that one parameter or secret.
//
// A reference is "ssm:<parameter name>" (a SecureString, decrypted) or
// "secretsmanager:<secret name or ARN>". Its value lists proxy URLs, with their credentials
// (http://user:password@host:port, https://, socks5://), separated by commas, spaces or new lines.
// No error of this package holds the value or any part of it.
package proxysecret

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/crawlstack/crawlstack/shared/httpfetch"
)

// The kinds of reference.
const (
	KindSSM            = "ssm"
	KindSecretsManager = "secretsmanager"
)

// Ref is a parsed reference: where the proxies are kept.
type Ref struct {
	Kind string // KindSSM or KindSecretsManager
	Name string // the parameter's name, or the secret's name or ARN
}

func (r Ref) String() string { return r.Kind + ":" + r.Name }

// ParseRef parses "ssm:<name>" or "secretsmanager:<name or ARN>".
func ParseRef(s string) (Ref, error) {
	kind, name, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || strings.TrimSpace(name) == "" || (kind != KindSSM && kind != KindSecretsManager) {
		return Ref{}, fmt.Errorf("proxies secret %q: want ssm:<parameter name> or secretsmanager:<secret name or ARN>", s)
	}
	return Ref{Kind: kind, Name: strings.TrimSpace(name)}, nil
}

// ParameterGetter reads a parameter (the SSM client).
type ParameterGetter interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// SecretGetter reads a secret's value (the Secrets Manager client).
type SecretGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Source reads references; a kind without its client is refused.
type Source struct {
	SSM     ParameterGetter
	Secrets SecretGetter
}

// ErrEmpty is returned for a parameter or secret that lists no proxy.
var ErrEmpty = errors.New("lists no proxy")

// Proxies reads the proxy URLs that ref names and checks each (httpfetch.ParseProxy).
func (s Source) Proxies(ctx context.Context, ref Ref) ([]string, error) {
	value, err := s.read(ctx, ref)
	if err != nil {
		return nil, err
	}
	fields := strings.FieldsFunc(value, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("proxies secret %s: %w", ref, ErrEmpty)
	}
	for i, f := range fields {
		if _, err := httpfetch.ParseProxy(f); err != nil {
			// ParseProxy's errors hold no password; the index says which one without quoting it.
			return nil, fmt.Errorf("proxies secret %s, proxy %d of %d: %w", ref, i+1, len(fields), err)
		}
	}
	return fields, nil
}

func (s Source) read(ctx context.Context, ref Ref) (string, error) {
	switch {
	case ref.Kind == KindSSM && s.SSM != nil:
		out, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(ref.Name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return "", fmt.Errorf("read the proxies from %s: %w", ref, err)
		}
		if out.Parameter == nil {
			return "", fmt.Errorf("read the proxies from %s: no parameter in the answer", ref)
		}
		return aws.ToString(out.Parameter.Value), nil
	case ref.Kind == KindSecretsManager && s.Secrets != nil:
		out, err := s.Secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(ref.Name)})
		if err != nil {
			return "", fmt.Errorf("read the proxies from %s: %w", ref, err)
		}
		if out.SecretString == nil {
			return "", fmt.Errorf("read the proxies from %s: the secret holds no string (a binary secret is not read)", ref)
		}
		return *out.SecretString, nil
	}
	return "", fmt.Errorf("read the proxies from %s: no client for %s", ref, ref.Kind)
}
