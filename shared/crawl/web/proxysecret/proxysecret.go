// Package proxysecret names where a deployed crawl's proxies are kept, with their credentials, in
// AWS Systems Manager Parameter Store or AWS Secrets Manager, so that no password sits in the
// stack's settings, the function's environment or a log line, and reads the list such a value
// holds. The fetch function reads the value once, when it starts (CRAWL_PROXIES_SECRET; package
// awssecrets makes the call); the stack grants it the read of that one parameter or secret.
//
// A reference is "ssm:<parameter name>" (a SecureString, decrypted) or
// "secretsmanager:<secret name or ARN>". Its value lists proxy URLs, with their credentials
// (http://user:password@host:port, https://, socks5://), separated by commas, spaces or new lines.
// No error of this package holds the value or any part of it. It links no AWS SDK client, so
// that the configuration (package pipeline) checks a reference in every function without the
// parse and schedule functions paying for the clients' start (docs/localstack.md, cold starts).
package proxysecret

import (
	"errors"
	"fmt"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
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

// ErrEmpty is returned for a parameter or secret that lists no proxy.
var ErrEmpty = errors.New("lists no proxy")

// List returns the proxy URLs that value, read from ref, lists, and checks each
// (httpfetch.ParseProxy).
func List(ref Ref, value string) ([]string, error) {
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
