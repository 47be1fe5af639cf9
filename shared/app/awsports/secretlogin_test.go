package awsports

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/aws/awssecrets"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/crawl/specstore"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/demo/loginsite"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

// A deployed fetch function logs in with a password that the spec names in Parameter Store (an
// ssm: reference under the stack's prefix), read with the SDK's SSM client, decrypted, and opens
// the page behind the login wall with the session the login gave.
func TestDeployedFetchLogsInWithAPasswordFromParameterStore(t *testing.T) {
	site := loginsite.New("alice", "pw-from-ssm-31c9", 2, 10)
	srv := httptest.NewServer(site)
	defer srv.Close()
	ssmSrv := &fakeSSM{params: map[string]string{"/crawlstack/headers/shop": site.Password}}
	ssmHTTP := httptest.NewServer(ssmSrv)
	defer ssmHTTP.Close()
	sdk := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(ssmHTTP.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}

	be := embedtest.Open(t, "fetch", "parse")
	cfg := pipeline.DefaultConfig()
	cfg.AllowNets, cfg.HostRPS, cfg.MaxTries = []string{"127.0.0.0/8"}, 0, 1
	cfg.SecretHeaders = secretref.Allowed{SSM: "/crawlstack/headers/"}
	secrets, err := HeaderSecrets(cfg.SecretHeaders, awssecrets.Reader{}, sdk)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := pipeline.NewOnly(cfg, pipeline.Ports{Queue: be.Queue, Table: be.Table, Blobs: be.Blobs, Secrets: secrets},
		slog.New(slog.DiscardHandler), pipeline.Fetch)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()

	u, _ := url.Parse(srv.URL)
	spec, err := crawlspec.Parse([]byte(fmt.Sprintf(`version: 1
seeds: [%s/]
hosts:
  %q:
    login:
      url: %s/login
      fields:
        user: alice
        password: {secret: "ssm:/crawlstack/headers/shop"}
      expired_body: %q
`, srv.URL, u.Host, srv.URL, loginsite.LoginForm)), crawlspec.Bounds{Secrets: cfg.SecretHeaders})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const crawl = "c1"
	if err := specstore.Save(ctx, be.Blobs, crawl, &spec.Settings); err != nil {
		t.Fatal(err)
	}
	// The member page, with the consent cookie the front page would have set: the wall is the
	// session alone.
	raw := srv.URL + "/account"
	n, _ := urlnorm.Normalize(raw)
	if _, err := hs.State.Admit(ctx, crawl, urlnorm.Key(n.String()), raw, srv.URL+"/", 1, "links"); err != nil {
		t.Fatal(err)
	}
	body, err := message.Encode(message.Fetch{Header: message.Header{Crawl: crawl}, Target: message.Target{URL: raw, Root: srv.URL + "/", Depth: 1}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hs.Fetch.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-1", Body: body,
		Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1795982400000"}}}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("fetch: %v, failures %v", err, resp.BatchItemFailures)
	}
	got, err := hs.State.Get(ctx, crawl, urlnorm.Key(n.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got.State != crawlstate.Fetched || site.Logins() != 1 {
		t.Errorf("the page is %s (%s) after %d logins; want it fetched after one login with the parameter's password",
			got.State, got.Detail, site.Logins())
	}
	asked := ssmSrv.requests()
	if len(asked) != 1 || asked[0]["Name"] != "/crawlstack/headers/shop" || asked[0]["WithDecryption"] != true {
		t.Errorf("Parameter Store was asked %v; want one decrypted read of /crawlstack/headers/shop", asked)
	}
}
