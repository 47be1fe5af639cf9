// Package awstest holds helpers for the integration tests of the AWS adapters. The tests run
// against whatever endpoint the environment names: LocalStack (AWS_ENDPOINT_URL) or the local
// emulators (AWS_ENDPOINT_URL_SQS, _DYNAMODB and _S3, written by localstack/emulators.sh). With no
// endpoint set they skip, so `go test ./...` never calls AWS itself; under
// CRAWL_TEST_REQUIRE_EMULATORS=1 (set by `localstack/emulators.sh test`, which `make test` runs) a
// missing endpoint fails the test instead, so a run whose emulators did not start cannot pass.
package awstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
)

// The environment variables that select a backend for the integration tests.
const (
	// EnvLocalStack set to 1 says the endpoint is LocalStack, which has features that the local
	// emulators lack (S3 event notifications).
	EnvLocalStack = "CRAWL_TEST_LOCALSTACK"
	// EnvEmulators set to 1 says the endpoints are the local emulators (set by the env file that
	// localstack/emulators.sh writes).
	EnvEmulators = "CRAWL_TEST_EMULATORS"
	// EnvRequireEmulators set to 1 says the endpoints must be there: a test that would skip for a
	// missing endpoint fails instead. `localstack/emulators.sh test` sets it for its go test run.
	EnvRequireEmulators = "CRAWL_TEST_REQUIRE_EMULATORS"
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

// Config returns the SDK configuration for an integration test. When no endpoint is overridden
// it skips the test (the tests never call real AWS by accident), or fails it under
// CRAWL_TEST_REQUIRE_EMULATORS=1.
func Config(t testing.TB) aws.Config {
	t.Helper()
	if !HasEndpoint() {
		missing(t, "no AWS endpoint: none of "+strings.Join(endpointVars, ", ")+" is set",
			"run `make test` or `make test-integration` "+
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
// general AWS_ENDPOINT_URL, or AWS_ENDPOINT_URL_<SERVICE>, e.g. "SQS", "DYNAMODB", "S3"); under
// CRAWL_TEST_REQUIRE_EMULATORS=1 it fails the test instead.
func RequireService(t testing.TB, service string) {
	t.Helper()
	if os.Getenv(awsconfig.EnvEndpoint) == "" && os.Getenv("AWS_ENDPOINT_URL_"+service) == "" {
		missing(t, fmt.Sprintf("no %s endpoint: neither %s nor AWS_ENDPOINT_URL_%s is set",
			service, awsconfig.EnvEndpoint, service),
			fmt.Sprintf("set AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_%s", service))
	}
}

// missing ends a test whose endpoint is missing: a failure under CRAWL_TEST_REQUIRE_EMULATORS=1,
// where the emulators should be running, and a skip (with the hint) everywhere else.
func missing(t testing.TB, what, hint string) {
	t.Helper()
	if os.Getenv(EnvRequireEmulators) == "1" {
		t.Fatalf("%s, but %s=1: the emulators should be running and their env file "+
			"(.cache/emulators/env) sourced; `make test` and `localstack/emulators.sh test` "+
			"start them, so look at their output for why they did not", what, EnvRequireEmulators)
	}
	t.Skipf("%s: %s", what, hint)
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

// RequireS3Notifications skips the test unless the endpoint sends S3 event notifications:
// LocalStack (and AWS) do, and so do the local emulators, whose S3 (localstack/fakes3) sends them
// to their SQS. It skips even under CRAWL_TEST_REQUIRE_EMULATORS=1, so a test that calls it must
// be named in localstack/allowed-skips.txt, or `localstack/emulators.sh test` fails on its skip.
func RequireS3Notifications(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvLocalStack) != "1" && !Emulators() {
		t.Skipf("S3 event notifications need LocalStack or the local emulators: set %s=1 with "+
			"AWS_ENDPOINT_URL, or source the emulators' env file", EnvLocalStack)
	}
}

// Emulators reports whether the endpoints are the local emulators rather than LocalStack or AWS.
func Emulators() bool { return os.Getenv(EnvEmulators) == "1" }

// DynamoTable creates a fresh crawl table, named from prefix, at the configured DynamoDB endpoint
// and deletes it when the test ends. It returns the table with its client and name.
func DynamoTable(t testing.TB, prefix string) (*dynamotable.Table, *dynamodb.Client, string) {
	t.Helper()
	cfg := Config(t)
	RequireService(t, "DYNAMODB")
	client := dynamodb.NewFromConfig(cfg)
	name := UniqueName(t, prefix)
	tb := dynamotable.New(client, name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := tb.CreateTable(ctx, name); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Logf("delete table %s: %v", name, err)
		}
	})
	return tb, client, name
}
