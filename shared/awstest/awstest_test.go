package awstest_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/awstest"
)

func TestUniqueName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z][a-z0-9-]{1,61}[a-z0-9]$`)
	seen := map[string]bool{}
	for range 20 {
		n := awstest.UniqueName(t, "crawl")
		if !valid.MatchString(n) || len(n) > 63 {
			t.Errorf("UniqueName = %q, not a valid bucket/table/queue name", n)
		}
		if seen[n] {
			t.Errorf("UniqueName repeated %q", n)
		}
		seen[n] = true
	}
	t.Run(strings.Repeat("VeryLongSubtestName_", 6), func(t *testing.T) {
		if n := awstest.UniqueName(t, "crawl"); len(n) > 63 || !valid.MatchString(n) {
			t.Errorf("UniqueName = %q (%d chars), want a valid name of at most 63", n, len(n))
		}
	})
}

func TestHasEndpoint(t *testing.T) {
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(v, "")
	}
	if awstest.HasEndpoint() {
		t.Fatal("HasEndpoint with no variables set = true")
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000")
	if !awstest.HasEndpoint() {
		t.Error("HasEndpoint with AWS_ENDPOINT_URL_DYNAMODB set = false")
	}
}
