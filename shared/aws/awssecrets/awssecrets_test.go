package awssecrets

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/crawlstack/crawlstack/shared/crawl/web/proxysecret"
)

// secret is the password in the tests' values: no error may hold it.
const secret = "pw-SECRET-4711"

// fakeSSM is a Parameter Store that holds one parameter, and records the requests.
type fakeSSM struct {
	name, value string
	asked       []ssm.GetParameterInput
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.asked = append(f.asked, *in)
	if aws.ToString(in.Name) != f.name {
		return nil, errors.New("ParameterNotFound")
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(f.value)}}, nil
}

// fakeSecrets is a Secrets Manager that holds one secret.
type fakeSecrets struct {
	id    string
	value *string
}

func (f *fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if aws.ToString(in.SecretId) != f.id {
		return nil, errors.New("ResourceNotFoundException")
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: f.value}, nil
}

// The proxies are read from either store and listed (proxysecret.List); a SecureString is asked
// for decrypted.
func TestProxiesFromEitherStore(t *testing.T) {
	value := "http://user:" + secret + "@127.0.0.1:3128,\n socks5://127.0.0.1:1080\n"
	want := []string{"http://user:" + secret + "@127.0.0.1:3128", "socks5://127.0.0.1:1080"}
	param := &fakeSSM{name: "/crawl/proxies", value: value}
	src := Source{SSM: param, Secrets: &fakeSecrets{id: "crawl-proxies", value: aws.String(value)}}
	for _, ref := range []proxysecret.Ref{{Kind: proxysecret.KindSSM, Name: "/crawl/proxies"}, {Kind: proxysecret.KindSecretsManager, Name: "crawl-proxies"}} {
		got, err := src.Proxies(context.Background(), ref)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Proxies(%s) = %q, %v; want %q", ref, got, err, want)
		}
	}
	if len(param.asked) != 1 || !aws.ToBool(param.asked[0].WithDecryption) {
		t.Errorf("the parameter was asked for as %+v; want once, decrypted", param.asked)
	}
}

// Every way of failing gives an error that names the parameter or secret and holds nothing of
// its value.
func TestErrorsHoldNoSecret(t *testing.T) {
	ssmRef := proxysecret.Ref{Kind: proxysecret.KindSSM, Name: "/p"}
	secretRef := proxysecret.Ref{Kind: proxysecret.KindSecretsManager, Name: "p"}
	for _, tc := range []struct {
		name  string
		value *string
		ref   proxysecret.Ref
		src   func(value *string) Source
		want  string
	}{
		{"a proxy of another scheme", aws.String("ftp://user:" + secret + "@127.0.0.1:21"), secretRef, secretsOf, "proxy ftp://127.0.0.1:21"},
		{"no proxy", aws.String(" ,\n"), ssmRef, ssmOf, "lists no proxy"},
		{"a binary secret", nil, secretRef, secretsOf, "holds no string"},
		{"a parameter that is not there", aws.String(secret), proxysecret.Ref{Kind: proxysecret.KindSSM, Name: "/other"}, ssmOf, "ssm:/other"},
		{"no client", aws.String(secret), secretRef, ssmOf, "no client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.src(tc.value).Proxies(context.Background(), tc.ref)
			if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want one that says %q and holds no secret", err, tc.want)
			}
		})
	}
}

func ssmOf(value *string) Source {
	return Source{SSM: &fakeSSM{name: "/p", value: aws.ToString(value)}}
}

func secretsOf(value *string) Source {
	return Source{Secrets: &fakeSecrets{id: "p", value: value}}
}
