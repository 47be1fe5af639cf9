package awssecrets

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
)

// Headers keeps a value for its TTL and reads it again after; a failed read is not kept, and its
// error names the reference and not a value.
func TestHeadersKeepAValueForItsTTL(t *testing.T) {
	src := &fakeSSM{name: "/h/token", value: secret}
	h := NewHeaders(Source{SSM: src, Secrets: &fakeSecrets{id: "h/cookie", value: aws.String("c=" + secret)}}, time.Minute)
	now := time.Unix(1_800_000_000, 0)
	h.now = func() time.Time { return now }
	ctx := context.Background()
	ref := secretref.Ref{Kind: secretref.KindSSM, Name: "/h/token"}
	for i, step := range []time.Duration{0, 59 * time.Second, 2 * time.Second} {
		now = now.Add(step)
		v, err := h.Resolve(ctx, ref)
		if err != nil || v != secret {
			t.Fatalf("read %d: %q, %v", i, v, err)
		}
	}
	if len(src.asked) != 2 || !aws.ToBool(src.asked[0].WithDecryption) {
		t.Errorf("%d reads over 61 s with a TTL of a minute (first decrypted: %v); want 2, decrypted", len(src.asked), src.asked)
	}
	if v, err := h.Resolve(ctx, secretref.Ref{Kind: secretref.KindSecretsManager, Name: "h/cookie"}); err != nil || v != "c="+secret {
		t.Errorf("the secret: %q, %v", v, err)
	}
	missing := secretref.Ref{Kind: secretref.KindSSM, Name: "/h/missing"}
	for range 2 {
		if _, err := h.Resolve(ctx, missing); err == nil || !strings.Contains(err.Error(), "ssm:/h/missing") || strings.Contains(err.Error(), secret) {
			t.Errorf("a missing parameter: %v; want an error that names it and no value", err)
		}
	}
	if len(src.asked) != 4 {
		t.Errorf("%d reads; want the missing parameter asked for both times", len(src.asked))
	}
}
