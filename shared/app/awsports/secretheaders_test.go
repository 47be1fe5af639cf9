package awsports

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

// fakeSSM is Parameter Store's JSON protocol on loopback (the emulators have no SSM): it holds
// parameters by name and records the GetParameter requests the SDK client sends.
type fakeSSM struct {
	params map[string]string
	mu     sync.Mutex
	asked  []map[string]any
}

func (f *fakeSSM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in map[string]any
	if r.Header.Get("X-Amz-Target") != "AmazonSSM.GetParameter" || json.NewDecoder(r.Body).Decode(&in) != nil {
		http.Error(w, `{"__type":"InvalidAction"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.asked = append(f.asked, in)
	f.mu.Unlock()
	name, _ := in["Name"].(string)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	v, ok := f.params[name]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"__type":"ParameterNotFound","message":"no such parameter"}`))
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"Parameter": map[string]any{"Name": name, "Type": "SecureString", "Value": v}})
}

func (f *fakeSSM) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.asked...)
}

// deployedFetch is the fetch handlers as a deployed fetch function builds them, on the embedded
// backend, with the stack's SSM prefix /crawlstack/headers/ and its secrets read by the SDK's SSM
// client from a loopback Parameter Store that holds params.
func deployedFetch(t *testing.T, params map[string]string) (*pipeline.Handlers, embedtest.Backend, *fakeSSM, pipeline.Config) {
	t.Helper()
	ssmSrv := &fakeSSM{params: params}
	ssmHTTP := httptest.NewServer(ssmSrv)
	t.Cleanup(ssmHTTP.Close)
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
	t.Cleanup(hs.Close)
	return hs, be, ssmSrv, cfg
}

// fetchOne admits raw (a page of the site at root) into crawl and hands fetch one message of it,
// as its queue would; it returns the URL's state and fetch's answer.
func fetchOne(t *testing.T, hs *pipeline.Handlers, crawl, root, raw string) (crawlstate.URL, events.SQSEventResponse) {
	t.Helper()
	ctx := context.Background()
	u, _ := urlnorm.Normalize(raw)
	if _, err := hs.State.Admit(ctx, crawl, urlnorm.Key(u.String()), raw, root, 1, "links"); err != nil {
		t.Fatal(err)
	}
	body, err := message.Encode(message.Fetch{Header: message.Header{Crawl: crawl}, Target: message.Target{URL: raw, Root: root, Depth: 1}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hs.Fetch.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-" + crawl, Body: body,
		Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1795982400000"}}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := hs.State.Get(ctx, crawl, urlnorm.Key(u.String()))
	if err != nil {
		t.Fatal(err)
	}
	return got, resp
}

// A deployed fetch function reads a spec's ssm: secret header with the SDK's SSM client
// (decrypted), under the stack's prefix, and sends it; the container keeps the value, so a second
// crawl that names it costs no read. A reference outside the prefix is refused before any request,
// with a message that names the stack's setting, and its crawl's fetch fails rather than going
// without the header.
func TestDeployedFetchSendsSecretHeadersUnderThePrefix(t *testing.T) {
	const token = "Bearer tok-SECRET-5150"
	var mu sync.Mutex
	seen := map[string]string{} // path: Authorization
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>hello</body></html>"))
	}))
	defer site.Close()
	hs, be, ssmSrv, cfg := deployedFetch(t, map[string]string{"/crawlstack/headers/token": token, "/other/token": "Bearer other"})

	ctx := context.Background()
	fetch := func(crawl, ref, path string) (crawlstate.State, events.SQSEventResponse) {
		t.Helper()
		set := &crawlspec.Settings{Version: crawlspec.Version, SecretHeaders: map[string]string{"Authorization": ref}}
		if err := specstore.Save(ctx, be.Blobs, crawl, set); err != nil {
			t.Fatal(err)
		}
		got, resp := fetchOne(t, hs, crawl, site.URL+"/", site.URL+path)
		return got.State, resp
	}

	for _, crawl := range []string{"c1", "c2"} {
		state, _ := fetch(crawl, "ssm:/crawlstack/headers/token", "/"+crawl)
		mu.Lock()
		sent := seen["/"+crawl]
		mu.Unlock()
		if state != crawlstate.Fetched || sent != token {
			t.Errorf("crawl %s: the URL is %s and the site saw Authorization %q; want it fetched with the parameter's value", crawl, state, sent)
		}
	}
	asked := ssmSrv.requests()
	if len(asked) != 1 || asked[0]["Name"] != "/crawlstack/headers/token" || asked[0]["WithDecryption"] != true {
		t.Errorf("Parameter Store was asked %v; want one decrypted read of /crawlstack/headers/token for both crawls", asked)
	}

	state, resp := fetch("c3", "ssm:/other/token", "/c3")
	mu.Lock()
	_, reached := seen["/c3"]
	mu.Unlock()
	if state == crawlstate.Fetched || reached || len(resp.BatchItemFailures) != 1 || len(ssmSrv.requests()) != 1 {
		t.Errorf("a reference outside the prefix: the URL is %s, the site reached %v, failures %v, %d reads; want no fetch, the message failed and no read",
			state, reached, resp.BatchItemFailures, len(ssmSrv.requests()))
	}
	err := cfg.SecretHeaders.Check(secretref.Ref{Kind: secretref.KindSSM, Name: "/other/token"})
	if err == nil || !strings.Contains(err.Error(), "secretHeaderParameterPrefix") {
		t.Errorf("the refusal %v; want it to name the stack's setting", err)
	}
}

// With no prefix set, the fetch function reads no secret header, and the refusal names the setting
// to set; with one set and no reader in the program, the function does not start.
func TestSecretHeadersWithoutTheSetting(t *testing.T) {
	r, err := HeaderSecrets(secretref.Allowed{}, awssecrets.Reader{}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Resolve(context.Background(), secretref.Ref{Kind: secretref.KindSecretsManager, Name: "crawlstack/headers/cookie"})
	if err == nil || !strings.Contains(err.Error(), "secretHeaderSecretPrefix") {
		t.Errorf("a secret with no prefix set: %v; want a refusal that names secretHeaderSecretPrefix", err)
	}
	env := map[string]string{"CRAWL_TABLE": "crawl", "CRAWL_BUCKET": "bucket", "CRAWL_SECRET_HEADER_SSM_PREFIX": "/crawlstack/headers/",
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
	log := slog.New(slog.DiscardHandler)
	_, err = newHandlers(context.Background(), func(k string) string { return env[k] }, log, nil, nil, pipeline.Fetch)
	if err == nil || !strings.Contains(err.Error(), "CRAWL_SECRET_HEADER_SSM_PREFIX") {
		t.Errorf("fetch with a prefix and no reader: %v; want an error that names the setting", err)
	}
	h, err := newHandlers(context.Background(), func(k string) string { return env[k] }, log, nil, nil, pipeline.Schedule)
	if err != nil {
		t.Errorf("schedule with a prefix and no reader: %v; want it built (it reads no secret)", err)
	} else {
		h.Close()
	}
}
