package awsports

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/specstore"
	"github.com/crawlstack/crawlstack/shared/demo/loginsite"
)

// A deployed fetch function logs in with a password that the spec names in Parameter Store (an
// ssm: reference under the stack's prefix), read with the SDK's SSM client, decrypted, and opens
// the page behind the login wall with the session the login gave.
func TestDeployedFetchLogsInWithAPasswordFromParameterStore(t *testing.T) {
	site := loginsite.New("alice", "pw-from-ssm-31c9", 2, 10)
	srv := httptest.NewServer(site)
	defer srv.Close()
	hs, be, ssmSrv, cfg := deployedFetch(t, map[string]string{"/crawlstack/headers/shop": site.Password})

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
	// /account: behind the session alone (the other pages want the front page's consent cookie too).
	got, resp := fetchOne(t, hs, crawl, srv.URL+"/", srv.URL+"/account")
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("fetch failed the message: %v", resp.BatchItemFailures)
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
