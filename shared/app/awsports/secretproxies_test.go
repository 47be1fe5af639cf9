package awsports

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
	"github.com/crawlstack/crawlstack/shared/aws/awssecrets"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
	"github.com/crawlstack/crawlstack/shared/testkit/proxycorpus"
)

// parameter is a Parameter Store that holds one parameter.
type parameter struct{ name, value string }

func (p parameter) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	if aws.ToString(in.Name) != p.name {
		return nil, errors.New("ParameterNotFound")
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(p.value)}}, nil
}

// The fetch function's proxies come from the parameter CRAWL_PROXIES_SECRET names, password and
// all; every log line of the fetch handler at debug level, through a dead proxy (its failures
// name the proxy) and a bad parameter (the init error), holds no password. The log is read as
// the function writes it: JSON lines.
func TestSecretProxiesAreUsedAndNeverLogged(t *testing.T) {
	const password = "pw-SECRET-0815"
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	go func() {
		for {
			c, err := dead.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var direct int
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { direct++ }))
	defer site.Close()

	be := embedtest.Open(t, "fetch", "parse")
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := pipeline.DefaultConfig()
	cfg.AllowNets, cfg.HostRPS, cfg.MaxTries = []string{"127.0.0.0/8"}, 0, 1
	cfg.ProxiesSecret = "ssm:/crawl/proxies"
	src := awssecrets.Source{SSM: parameter{name: "/crawl/proxies", value: "http://crawler:" + password + "@" + dead.Addr().String()}}
	cfg, err = SecretProxies(context.Background(), cfg, src.Proxies)
	if err != nil || len(cfg.Proxies) != 1 {
		t.Fatalf("the proxies from the parameter: %d, %v; want the one it lists", len(cfg.Proxies), err)
	}
	hs, err := pipeline.NewOnly(cfg, pipeline.Ports{Queue: be.Queue, Table: be.Table, Blobs: be.Blobs}, log, pipeline.Fetch)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()

	ctx := context.Background()
	raw := site.URL + "/page"
	u, _ := urlnorm.Normalize(raw)
	if _, err := hs.State.Admit(ctx, "c", urlnorm.Key(u.String()), raw, site.URL+"/", 1, "links"); err != nil {
		t.Fatal(err)
	}
	body, err := message.Encode(message.Fetch{Header: message.Header{Crawl: "c"}, Target: message.Target{URL: raw, Root: site.URL + "/", Depth: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: body,
		Attributes: map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1795982400000"}}}}
	if _, err := hs.Fetch.Handle(ctx, ev); err != nil {
		t.Fatal(err)
	}
	got, err := hs.State.Get(ctx, "c", urlnorm.Key(u.String()))
	// Its robots.txt is asked for through the dead proxy first: the URL ends skipped,
	// robots_unavailable, after the one try allowed.
	if err != nil || got.State != crawlstate.Skipped || direct != 0 {
		t.Errorf("the URL is %s/%s, %v, and the site saw %d requests; want it skipped through the dead proxy, and none", got.State, got.Class, err, direct)
	}

	// A parameter that lists a bad proxy stops the function at init; main logs the error.
	src.SSM = parameter{name: "/crawl/proxies", value: "ftp://crawler:" + password + "@" + dead.Addr().String()}
	_, err = SecretProxies(ctx, cfg, src.Proxies)
	if err == nil {
		t.Fatal("a bad proxy in the parameter: no error")
	}
	log.Error("cannot start: bad configuration", "err", err.Error())

	out := logs.String()
	if !strings.Contains(out, "ftp://"+dead.Addr().String()) || !strings.Contains(out, "cannot start") {
		t.Fatalf("the log does not name the proxy (redacted) and the init error, so it proves nothing:\n%s", out)
	}
	if strings.Contains(out, password) {
		t.Errorf("the proxy's password is in the log:\n%s", out)
	}
}

// A program that runs fetch with CRAWL_PROXIES_SECRET set, but passes no reader, stops at init
// with an error that says so, rather than crawling without the proxies; parse and schedule, which
// use no proxy, start without one.
func TestASecretWithoutAReaderStopsFetchAlone(t *testing.T) {
	env := map[string]string{"CRAWL_TABLE": "crawl", "CRAWL_BUCKET": "bucket", "CRAWL_PROXIES_SECRET": "ssm:/crawl/proxies",
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
	getenv := func(k string) string { return env[k] }
	log := slog.New(slog.DiscardHandler)
	_, err := newHandlers(context.Background(), getenv, log, nil, nil, pipeline.Fetch)
	if err == nil || !strings.Contains(err.Error(), "CRAWL_PROXIES_SECRET is set, but this program reads no secrets") {
		t.Errorf("fetch with a secret and no reader: %v; want an error that names CRAWL_PROXIES_SECRET", err)
	}
	for _, name := range []string{pipeline.Parse, pipeline.Schedule} {
		h, err := newHandlers(context.Background(), getenv, log, nil, nil, name)
		if err != nil {
			t.Errorf("%s with a secret and no reader: %v; want it built", name, err)
			continue
		}
		h.Close()
	}
}

// Every malformed proxy URL of the corpus, in CRAWL_PROXIES or in the parameter that
// CRAWL_PROXIES_SECRET names, stops the fetch function at init; the error, logged at debug level
// as main logs it, holds no password.
func TestBadProxiesStopTheFunctionWithoutThePassword(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, raw := range proxycorpus.Bad(t) {
		env := map[string]string{"CRAWL_TABLE": "crawl", "CRAWL_BUCKET": "bucket", "CRAWL_PROXIES": raw,
			"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
		h, err := newHandlers(context.Background(), func(k string) string { return env[k] }, log, nil, nil, pipeline.Fetch)
		if err == nil {
			h.Close()
			t.Errorf("CRAWL_PROXIES=%q: the fetch function started", raw)
		} else {
			log.Error("cannot start: bad configuration", "err", err.Error())
		}

		cfg := pipeline.DefaultConfig()
		cfg.ProxiesSecret = "ssm:/crawl/proxies"
		src := awssecrets.Source{SSM: parameter{name: "/crawl/proxies", value: raw}}
		if _, err := SecretProxies(context.Background(), cfg, src.Proxies); err == nil {
			t.Errorf("a parameter that holds %q: no error", raw)
		} else {
			log.Error("cannot start: bad configuration", "err", err.Error())
		}
	}
	if !strings.Contains(logs.String(), "cannot start") {
		t.Fatalf("nothing logged, so the test proves nothing:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), proxycorpus.Marker) {
		t.Errorf("the password is in the log:\n%s", logs.String())
	}
}
