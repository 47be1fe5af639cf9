package proxysecret

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// secret is the password in the tests' values: no error may hold it.
const secret = "pw-SECRET-4711"

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

// A value is split at commas, spaces and new lines, and every proxy in it is checked; every
// error names the reference and holds nothing of the value.
func TestListSplitsAndChecksWithoutQuotingTheValue(t *testing.T) {
	ref := Ref{KindSSM, "/crawl/proxies"}
	got, err := List(ref, "http://user:"+secret+"@127.0.0.1:3128,\n socks5://127.0.0.1:1080\n")
	if want := []string{"http://user:" + secret + "@127.0.0.1:3128", "socks5://127.0.0.1:1080"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("List = %q, %v; want %q", got, err, want)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"a proxy that is not a URL", "http://user:" + secret + "@127.0.0.1:3128,http://u:" + secret + "@[::1", "proxy 2 of 2"},
		{"a proxy of another scheme", "ftp://user:" + secret + "@127.0.0.1:21", "proxy ftp://127.0.0.1:21:"},
		{"no port", "http://user:" + secret + "@proxy.example", "host:port"},
		{"no proxy", " ,\n", "lists no proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := List(ref, tc.value)
			if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), ref.String()) {
				t.Errorf("error %v; want one that names %s, says %q and holds no secret", err, ref, tc.want)
			}
		})
	}
	if _, err := List(ref, "\t"); !errors.Is(err, ErrEmpty) {
		t.Errorf("an empty list: %v; want ErrEmpty", err)
	}
}
