// Package awssecrets reads the value that a proxysecret or secretref reference names: an SSM
// Parameter Store parameter (a SecureString, read decrypted) or a Secrets Manager secret: the
// proxies' list at init, and crawl specs' secret headers (Headers) as fetch meets their crawls. Only the fetch function
// and the crawl command link it, so that the parse and schedule functions do not start the two
// SDK clients they never call (docs/localstack.md, cold starts). No error of this package holds
// the value or any part of it.
package awssecrets

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/crawlstack/crawlstack/shared/crawl/web/proxysecret"
)

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

// Proxies reads the proxy URLs that ref names, with clients built from cfg: what a function's
// init calls (awsports.NewFunction).
func Proxies(ctx context.Context, cfg aws.Config, ref proxysecret.Ref) ([]string, error) {
	return Source{SSM: ssm.NewFromConfig(cfg), Secrets: secretsmanager.NewFromConfig(cfg)}.Proxies(ctx, ref)
}

// Proxies reads the proxy URLs that ref names and checks each (proxysecret.List).
func (s Source) Proxies(ctx context.Context, ref proxysecret.Ref) ([]string, error) {
	value, err := s.read(ctx, ref)
	if err != nil {
		return nil, err
	}
	return proxysecret.List(ref, value)
}

func (s Source) read(ctx context.Context, ref proxysecret.Ref) (string, error) {
	v, err := s.value(ctx, ref.Kind, ref.Name)
	if err != nil {
		return "", fmt.Errorf("read the proxies from %s: %w", ref, err)
	}
	return v, nil
}

// value reads the parameter (kind ssm) or secret (kind secretsmanager) name names. Its errors
// name neither the reference (the caller does) nor the value.
func (s Source) value(ctx context.Context, kind, name string) (string, error) {
	switch {
	case kind == proxysecret.KindSSM && s.SSM != nil:
		out, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return "", err
		}
		if out.Parameter == nil {
			return "", errors.New("no parameter in the answer")
		}
		return aws.ToString(out.Parameter.Value), nil
	case kind == proxysecret.KindSecretsManager && s.Secrets != nil:
		out, err := s.Secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(name)})
		if err != nil {
			return "", err
		}
		if out.SecretString == nil {
			return "", errors.New("the secret holds no string (a binary secret is not read)")
		}
		return *out.SecretString, nil
	}
	return "", fmt.Errorf("no client for %s", kind)
}
