// Package awstest holds helpers for the integration tests of the AWS adapters. The tests run
// against whatever endpoint the environment names: LocalStack (AWS_ENDPOINT_URL) or the local
// emulators (AWS_ENDPOINT_URL_SQS, _DYNAMODB and _S3, written by localstack/emulators.sh). With no
// endpoint set they skip, so `go test ./...` never calls AWS itself.
package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/crawlstack/crawlstack/shared/awsconfig"
)

// The environment variables that select a backend for the integration tests.
const (
	// EnvLocalStack set to 1 says the endpoint is LocalStack, which has features that the local
	// emulators lack (S3 event notifications).
	EnvLocalStack = "CRAWL_TEST_LOCALSTACK"
	// EnvEmulators set to 1 says the endpoints are the local emulators (set by the env file that
	// localstack/emulators.sh writes).
	EnvEmulators = "CRAWL_TEST_EMULATORS"
)

var endpointVars = []string{
	awsconfig.EnvEndpoint, awsconfig.EnvEndpointSQS, awsconfig.EnvEndpointDynamoDB, awsconfig.EnvEndpointS3,
}

// HasEndpoint reports whether the environment overrides any AWS endpoint.
func HasEndpoint() bool {
	for _, v := range endpointVars {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// Config returns the SDK configuration for an integration test, or skips the test when no
// endpoint is overridden: the tests never call real AWS by accident.
func Config(t testing.TB) aws.Config {
	t.Helper()
	if !HasEndpoint() {
		t.Skip("no AWS endpoint: run `make test` or `make test-integration` " +
			"(set AWS_ENDPOINT_URL, or AWS_ENDPOINT_URL_SQS/_DYNAMODB/_S3)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		t.Fatalf("load aws config: %v", err)
	}
	return cfg
}

// RequireService skips the test unless the environment gives an endpoint for the service (the
// general AWS_ENDPOINT_URL, or AWS_ENDPOINT_URL_<SERVICE>, e.g. "SQS", "DYNAMODB", "S3").
func RequireService(t testing.TB, service string) {
	t.Helper()
	if os.Getenv(awsconfig.EnvEndpoint) == "" && os.Getenv("AWS_ENDPOINT_URL_"+service) == "" {
		t.Skipf("no %s endpoint: set AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_%s", service, service)
	}
}

// UniqueName returns a fresh resource name: prefix, the test's name and a random suffix, made
// of lower-case letters, digits and hyphens (valid for queues, tables and buckets), at most 63
// characters.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatalf("random name: %v", err)
	}
	name := strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			return c
		case c >= 'A' && c <= 'Z':
			return c + 'a' - 'A'
		}
		return '-'
	}, t.Name())
	name = strings.Trim(name, "-")
	suffix := hex.EncodeToString(r[:])
	if room := 63 - len(prefix) - len(suffix) - 2; len(name) > room {
		name = name[len(name)-room:]
	}
	return strings.ToLower(prefix) + "-" + strings.Trim(name, "-") + "-" + suffix
}

// RequireS3Notifications skips the test unless the endpoint sends S3 event notifications. Only
// LocalStack (and AWS) do; no local emulator does, so tests that need one drive the handler with
// a sample event from events/ instead.
func RequireS3Notifications(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvLocalStack) != "1" {
		t.Skipf("S3 event notifications need LocalStack: set %s=1 with AWS_ENDPOINT_URL "+
			"(the local emulators send none)", EnvLocalStack)
	}
}

// Emulators reports whether the endpoints are the local emulators rather than LocalStack or AWS.
func Emulators() bool { return os.Getenv(EnvEmulators) == "1" }
