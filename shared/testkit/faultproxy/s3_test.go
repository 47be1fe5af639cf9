package faultproxy_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/crawlstack/crawlstack/shared/testkit/faultproxy"
)

// TestIntegrationS3PutFailsAfterTheObjectIsWritten: a PUT with If-None-Match: * is written, then
// answered 500; the SDK's replay finds the object there (412). The emulator, read directly, holds
// the first attempt's bytes.
func TestIntegrationS3PutFailsAfterTheObjectIsWritten(t *testing.T) {
	r := newRig(t, faultproxy.Schedule{Seed: 2, Script: map[uint64]faultproxy.Kind{1: faultproxy.Apply500}}, 0, 0)
	bucket := r.newBucket(t)
	ctx := ctxT(t)
	_, err := r.via.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("pages/a.warc.gz"),
		Body: bytes.NewReader([]byte("first")), IfNoneMatch: aws.String("*")})
	if statusOf(err) != 412 {
		t.Fatalf("PutObject through apply-500: err = %v, want the replay's 412 Precondition Failed", err)
	}
	got, err := r.direct.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("pages/a.warc.gz")})
	if err != nil {
		t.Fatalf("the object is not on the emulator: %v", err)
	}
	defer got.Body.Close()
	if b, _ := io.ReadAll(got.Body); string(b) != "first" {
		t.Errorf("the emulator holds %q, want %q", b, "first")
	}
	fs := r.p.Faults()
	if len(fs) != 1 || fs[0].Op != "PutObject" || fs[0].Target != bucket+"/pages/a.warc.gz" {
		t.Errorf("fault log = %v, want one apply-500 on PutObject %s/pages/a.warc.gz", fs, bucket)
	}
}

// TestIntegrationS3DeleteObjectsApplyThenDrop: a DeleteObjects whose answer is lost has deleted
// the objects; the SDK's replay succeeds.
func TestIntegrationS3DeleteObjectsApplyThenDrop(t *testing.T) {
	r := newRig(t, faultproxy.Schedule{Seed: 2, Script: map[uint64]faultproxy.Kind{1: faultproxy.ApplyDrop}}, 0, 0)
	bucket := r.newBucket(t)
	ctx := ctxT(t)
	for _, k := range []string{"a", "b"} {
		if _, err := r.direct.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.via.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{
		Objects: []types.ObjectIdentifier{{Key: aws.String("a")}, {Key: aws.String("b")}}}}); err != nil {
		t.Fatalf("DeleteObjects: %v", err)
	}
	list, err := r.direct.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Contents) != 0 {
		t.Errorf("the bucket still holds %d objects", len(list.Contents))
	}
	if fs := r.p.Faults(); len(fs) != 1 || fs[0].Op != "DeleteObjects" || fs[0].Kind != faultproxy.ApplyDrop {
		t.Errorf("fault log = %v, want one apply-drop on DeleteObjects", fs)
	}
}

// TestIntegrationS3SlowDown: a throttled PUT is not written; the SDK decodes the 503 SlowDown and
// counts it as a throttle.
func TestIntegrationS3SlowDown(t *testing.T) {
	r := newRig(t, faultproxy.Schedule{Seed: 2, Script: map[uint64]faultproxy.Kind{1: faultproxy.Throttle}}, 1, 0)
	bucket := r.newBucket(t)
	ctx := ctxT(t)
	_, err := r.via.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"), Body: strings.NewReader("x")})
	if codeOf(err) != "SlowDown" || statusOf(err) != 503 || !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
		t.Fatalf("err = %v (code %q, status %d), want a 503 SlowDown the SDK counts as a throttle", err, codeOf(err), statusOf(err))
	}
	if _, err := r.direct.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("k")}); statusOf(err) != 404 {
		t.Errorf("HeadObject of the throttled PUT's key: err = %v, want 404 (never written)", err)
	}
}
