package awse2e

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
)

// checkArchive downloads the WARC file at key and its index, and has warcio.js check them: the
// digests of every record, and that the index resolves each of the file's pages.
func checkArchive(t *testing.T, c *s3.Client, bucket, key string, pages int) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{key, key + warcfile.IndexSuffix} {
		ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		if err != nil {
			cancel()
			t.Fatalf("get s3://%s/%s: %v", bucket, k, err)
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		cancel()
		if err != nil {
			t.Fatalf("read s3://%s/%s: %v", bucket, k, err)
		}
		if err := os.WriteFile(filepath.Join(dir, path.Base(k)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := warctest.Check(t, filepath.Join(dir, path.Base(key)))
	if sum.Responses != pages || sum.Resolved != pages {
		t.Errorf("warcio.js read %+v in s3://%s/%s, want %d pages that its index resolves", sum, bucket, key, pages)
	}
}
