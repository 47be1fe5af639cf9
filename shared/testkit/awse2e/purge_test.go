package awse2e

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// TestIntegrationPurgeBackendAWS: `crawl purge --backend aws` erases a page from DynamoDB and S3,
// keeps the other pages of its WARC file readable, and a later `crawl run --backend aws` does not
// fetch it; the oracle reads the table and the bucket with the SDK's own clients (shared/app/cli runs
// the same check on the embedded backend).
func TestIntegrationPurgeBackendAWS(t *testing.T) {
	h := newHarness(t, 1, 1)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.setenv()
	e2etest.CheckPurge(t, crawlMain, []string{"--backend", "aws", "--host-rps", "0", "--visibility", "5s", "--concurrency", "4"},
		[]string{"--backend", "aws"}, rawAWS(h))
}

// TestIntegrationPurgeLeavesNothingInAnyStoreBackendAWS: after a purge of a URL and of a host, no
// DynamoDB item and no S3 object names them but where docs/erasure.md says they are kept
// (shared/app/cli runs the same check on the embedded backend).
func TestIntegrationPurgeLeavesNothingInAnyStoreBackendAWS(t *testing.T) {
	h := newHarness(t, 1, 1)
	h.setup(cli.QueueSettings{Visibility: 5 * time.Second, MaxReceiveCount: 5})
	h.setenv()
	e2etest.CheckPurgeSearchesEveryStore(t, crawlMain, []string{"--backend", "aws", "--host-rps", "0", "--visibility", "5s", "--concurrency", "4"},
		[]string{"--backend", "aws"}, rawAWS(h))
}

// rawAWS reads the harness's table and bucket with the SDK's own clients: every item (a Scan,
// which the crawler never does) and every object.
func rawAWS(h *harness) e2etest.Raw {
	c := awsconfig.NewClients(h.cfg)
	return e2etest.Raw{
		Rows: func(t testing.TB) map[string]string {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out := map[string]string{}
			pages := dynamodb.NewScanPaginator(c.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(h.be.TableName), ConsistentRead: aws.Bool(true)})
			for pages.HasMorePages() {
				page, err := pages.NextPage(ctx)
				if err != nil {
					t.Fatalf("scan %s: %v", h.be.TableName, err)
				}
				for _, it := range page.Items {
					row := map[string]any{}
					for name, v := range it {
						switch v := v.(type) {
						case *types.AttributeValueMemberS:
							row[name] = v.Value
						case *types.AttributeValueMemberN:
							row[name] = json.Number(v.Value)
						case *types.AttributeValueMemberBOOL:
							row[name] = v.Value
						default:
							t.Fatalf("item attribute %s: unexpected type %T", name, v)
						}
					}
					b, err := json.Marshal(row)
					if err != nil {
						t.Fatal(err)
					}
					out[row["pk"].(string)+"|"+row["sk"].(string)] = string(b) // as table.Key.String

				}
			}
			return out
		},
		Objects: func(t testing.TB) map[string][]byte {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out := map[string][]byte{}
			pages := s3.NewListObjectsV2Paginator(c.S3, &s3.ListObjectsV2Input{Bucket: aws.String(h.be.Bucket)})
			for pages.HasMorePages() {
				page, err := pages.NextPage(ctx)
				if err != nil {
					t.Fatalf("list %s: %v", h.be.Bucket, err)
				}
				for _, o := range page.Contents {
					got, err := c.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(h.be.Bucket), Key: o.Key})
					if err != nil {
						t.Fatalf("get %s: %v", aws.ToString(o.Key), err)
					}
					b, err := io.ReadAll(got.Body)
					got.Body.Close()
					if err != nil {
						t.Fatal(err)
					}
					out[aws.ToString(o.Key)] = b
				}
			}
			return out
		},
	}
}
