package proxysecret

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

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ref
		ok   bool
	}{
		{"ssm:/crawl/proxies", Ref{KindSSM, "/crawl/proxies"}, true},
		{" secretsmanager:crawl-proxies ", Ref{KindSecretsManager, "crawl-proxies"}, true},
		{"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:p-AbCdEf", Ref{KindSecretsManager, "arn:aws:secretsmanager:us-east-1:123456789012:secret:p-AbCdEf"}, true},
		{"ssm:", Ref{}, false},
		{"/crawl/proxies", Ref{}, false},
		{"vault:/crawl/proxies", Ref{}, false},
	} {
		got, err := ParseRef(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// The proxies are read from either store, split at commas, spaces and new lines; a SecureString
// is asked for decrypted.
func TestProxiesFromEitherStore(t *testing.T) {
	value := "http://user:" + secret + "@127.0.0.1:3128,\n socks5://127.0.0.1:1080\n"
	want := []string{"http://user:" + secret + "@127.0.0.1:3128", "socks5://127.0.0.1:1080"}
	param := &fakeSSM{name: "/crawl/proxies", value: value}
	src := Source{SSM: param, Secrets: &fakeSecrets{id: "crawl-proxies", value: aws.String(value)}}
	for _, ref := range []Ref{{KindSSM, "/crawl/proxies"}, {KindSecretsManager, "crawl-proxies"}} {
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
	for _, tc := range []struct {
		name  string
		value *string
		ref   Ref
		src   func(value *string) Source
		want  string
	}{
		{"a proxy that is not a URL", aws.String("http://user:" + secret + "@127.0.0.1:3128,http://u:" + secret + "@[::1"), Ref{KindSSM, "/p"}, ssmOf, "proxy 2 of 2"},
		{"a proxy of another scheme", aws.String("ftp://user:" + secret + "@127.0.0.1:21"), Ref{KindSecretsManager, "p"}, secretsOf, "ftp://user:xxxxx@"},
		{"no port", aws.String("http://user:" + secret + "@proxy.example"), Ref{KindSSM, "/p"}, ssmOf, "host:port"},
		{"no proxy", aws.String(" ,\n"), Ref{KindSSM, "/p"}, ssmOf, "lists no proxy"},
		{"a binary secret", nil, Ref{KindSecretsManager, "p"}, secretsOf, "holds no string"},
		{"a parameter that is not there", aws.String(secret), Ref{KindSSM, "/other"}, ssmOf, "ssm:/other"},
		{"no client", aws.String(secret), Ref{KindSecretsManager, "p"}, ssmOf, "no client"},
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
