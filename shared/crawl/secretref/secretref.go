// Package secretref names where a secret request header's value is kept, so that a crawl spec
// holds the reference and never the value (docs/spec.md): "ssm:<parameter name>" (an SSM
// Parameter Store parameter, a SecureString read decrypted), "secretsmanager:<secret name or
// ARN>", and, for `crawl run` only, "env:<variable>" or "file:<path>". Local reads the last two;
// package awssecrets reads the first two. No error of this package holds a value.
package secretref

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// The kinds of reference.
const (
	KindSSM            = "ssm"
	KindSecretsManager = "secretsmanager"
	KindEnv            = "env"
	KindFile           = "file"
)

// Ref is a parsed reference.
type Ref struct {
	Kind string
	Name string // the parameter, secret, variable or file
}

func (r Ref) String() string { return r.Kind + ":" + r.Name }

// Local says whether the reference is read from the machine the crawl runs on (env:, file:).
func (r Ref) Local() bool { return r.Kind == KindEnv || r.Kind == KindFile }

// Parse parses a reference. local allows env: and file:, which only `crawl run` reads: a deployed
// stack's functions have neither the variable nor the file.
func Parse(s string, local bool) (Ref, error) {
	kind, name, ok := strings.Cut(strings.TrimSpace(s), ":")
	name = strings.TrimSpace(name)
	want := "ssm:<parameter name> or secretsmanager:<secret name or ARN>"
	if local {
		want += ", env:<variable> or file:<path>"
	}
	r := Ref{Kind: kind, Name: name}
	switch {
	case !ok || name == "":
	case kind == KindSSM || kind == KindSecretsManager:
		return r, nil
	case r.Local() && local:
		return r, nil
	case r.Local():
		return Ref{}, fmt.Errorf("secret %q: %s: references are read by crawl run only; on AWS, want %s", s, kind, want)
	}
	return Ref{}, fmt.Errorf("secret %q: want %s", s, want)
}

// Resolver reads the value a reference names.
type Resolver interface {
	Resolve(ctx context.Context, r Ref) (string, error)
}

// ErrNoReader is returned for a reference that no reader of the program reads.
var ErrNoReader = errors.New("this program reads no such secret")

// Local reads env: and file: references, and hands the others to AWS (nil: refused).
type Local struct {
	AWS Resolver
	// Getenv reads a variable (os.Getenv when nil).
	Getenv func(string) string
}

// Resolve reads r. A value is one line: a trailing newline of a file is dropped.
func (l Local) Resolve(ctx context.Context, r Ref) (string, error) {
	switch r.Kind {
	case KindEnv:
		getenv := l.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		v := getenv(r.Name)
		if v == "" {
			return "", fmt.Errorf("secret %s: the variable is not set, or empty", r)
		}
		return v, nil
	case KindFile:
		b, err := os.ReadFile(r.Name)
		if err != nil {
			return "", fmt.Errorf("secret %s: %w", r, errors.Unwrap(err))
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("secret %s: the file is empty", r)
		}
		return v, nil
	}
	if l.AWS == nil {
		return "", fmt.Errorf("secret %s: %w (crawl run reads ssm: and secretsmanager: with --backend aws)", r, ErrNoReader)
	}
	return l.AWS.Resolve(ctx, r)
}

// None refuses every reference: the resolver of a program that sends no requests, or of a
// function deployed without the grant to read them.
type None struct{}

// Resolve refuses r.
func (None) Resolve(_ context.Context, r Ref) (string, error) {
	return "", fmt.Errorf("secret %s: %w", r, ErrNoReader)
}
