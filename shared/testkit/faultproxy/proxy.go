package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Upstreams are the emulators' endpoints ("http://127.0.0.1:PORT").
type Upstreams struct {
	DynamoDB, SQS, S3 string
}

// UpstreamsFromEnv reads the emulators' endpoints from AWS_ENDPOINT_URL_DYNAMODB, _SQS and _S3,
// each falling back on AWS_ENDPOINT_URL, as the SDK reads them.
func UpstreamsFromEnv() (Upstreams, error) {
	get := func(s string) string {
		if v := os.Getenv("AWS_ENDPOINT_URL_" + s); v != "" {
			return v
		}
		return os.Getenv("AWS_ENDPOINT_URL")
	}
	u := Upstreams{DynamoDB: get("DYNAMODB"), SQS: get("SQS"), S3: get("S3")}
	if u.DynamoDB == "" || u.SQS == "" || u.S3 == "" {
		return u, errors.New("faultproxy: AWS_ENDPOINT_URL_DYNAMODB, _SQS and _S3 (or AWS_ENDPOINT_URL) must name the emulators")
	}
	return u, nil
}

// Call is a request the proxy forwarded and the emulator answered (applied), as Observe sees it.
type Call struct {
	// Seq is the request's sequence number in the schedule (0 for a set-up call).
	Seq     uint64
	Service Service
	Op      string
	Target  string
	// Queue is an SQS request's queue URL.
	Queue string
	// Status is the emulator's answer; Fault the fault injected on it ("" for none).
	Status int
	Fault  Kind
	// Answered is when the emulator's answer came back to the proxy.
	Answered time.Time
	// Body is the request's body.
	Body []byte
}

// Option configures a Proxy.
type Option func(*Proxy)

// WithObserver calls fn with every request that the emulators answered, in the proxy's handler
// goroutine: fn must be quick and safe for concurrent use.
func WithObserver(fn func(Call)) Option { return func(p *Proxy) { p.observe = fn } }

// Proxy is the fault proxy. It is safe for concurrent use.
type Proxy struct {
	sched   Schedule
	observe func(Call)
	fronts  map[Service]*front
	tr      *http.Transport
	seq     atomic.Uint64
	dups    *dupStore

	mu     sync.Mutex
	faults []Fault
	counts map[Kind]int
}

// front is the listener of one service.
type front struct {
	p        *Proxy
	service  Service
	upstream *url.URL
	srv      *http.Server
	url      string
}

// Start serves the proxy on three loopback ports, one per service, in front of up, with the
// faults of s, until Close.
func Start(s Schedule, up Upstreams, opts ...Option) (*Proxy, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	p := &Proxy{sched: s, fronts: map[Service]*front{}, counts: map[Kind]int{}, dups: newDupStore(),
		tr: &http.Transport{MaxIdleConnsPerHost: 128, DisableCompression: true, IdleConnTimeout: 30 * time.Second}}
	for _, o := range opts {
		o(p)
	}
	for svc, raw := range map[Service]string{DynamoDB: up.DynamoDB, SQS: up.SQS, S3: up.S3} {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			p.Close()
			return nil, fmt.Errorf("faultproxy: upstream of %s %q: want http://host:port", svc, raw)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("faultproxy: listen for %s: %w", svc, err)
		}
		f := &front{p: p, service: svc, upstream: u, url: "http://" + ln.Addr().String()}
		f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 30 * time.Second}
		p.fronts[svc] = f
		go func() { _ = f.srv.Serve(ln) }()
	}
	return p, nil
}

// Close stops the listeners. Answers held by Delay faults end at once.
func (p *Proxy) Close() {
	for _, f := range p.fronts {
		_ = f.srv.Close()
	}
	p.tr.CloseIdleConnections()
}

// Endpoint is the proxy's address for service s ("http://127.0.0.1:PORT").
func (p *Proxy) Endpoint(s Service) string { return p.fronts[s].url }

// Env is the environment that points the SDK at the proxy: AWS_ENDPOINT_URL_DYNAMODB, _SQS, _S3.
func (p *Proxy) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": p.Endpoint(DynamoDB),
		"AWS_ENDPOINT_URL_SQS":      p.Endpoint(SQS),
		"AWS_ENDPOINT_URL_S3":       p.Endpoint(S3),
	}
}

// Schedule is the proxy's schedule.
func (p *Proxy) Schedule() Schedule { return p.sched }

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := f.p
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "faultproxy: read the request: "+err.Error(), http.StatusBadGateway)
		return
	}
	c := classify(f.service, r, body)
	var seq uint64
	var kind Kind
	if c.class != setup {
		seq = p.seq.Add(1)
		kind = p.sched.decide(seq, c.can)
	}
	if c.service == SQS {
		p.dups.track(c)
	}
	if kind == Throttle {
		p.record(seq, c, kind, "")
		throttleAnswer(c.service, seq).write(w)
		return
	}
	// A request whose answer the proxy will lose is applied whether or not the client waits for
	// it, as on AWS; any other request ends when its client gives up.
	ctx := r.Context()
	if kind == ApplyDrop || kind == Apply500 || kind == Delay {
		ctx = context.WithoutCancel(ctx)
	}
	resp, respBody, err := f.forward(ctx, r, body)
	if err != nil {
		if r.Context().Err() == nil {
			http.Error(w, "faultproxy: "+err.Error(), http.StatusBadGateway)
		}
		return
	}
	if p.observe != nil {
		p.observe(Call{Seq: seq, Service: c.service, Op: c.op, Target: c.target, Queue: c.queue,
			Status: resp.StatusCode, Fault: kind, Answered: time.Now(), Body: body})
	}
	switch kind {
	case ApplyDrop:
		p.record(seq, c, kind, "applied with status "+strconv.Itoa(resp.StatusCode))
		reset(w)
		return
	case Apply500:
		p.record(seq, c, kind, "applied with status "+strconv.Itoa(resp.StatusCode))
		internalAnswer(c.service).write(w)
		return
	case Delay:
		p.record(seq, c, kind, fmt.Sprintf("applied with status %d, answer held %v", resp.StatusCode, p.sched.delay()))
		if !hold(r.Context(), p.sched.delay()) {
			return // the client gave up, as the fault meant it to
		}
	}
	if c.service == SQS && c.op == "ReceiveMessage" && resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Encoding") == "" {
		respBody = p.receiveFaults(seq, c, kind, respBody)
	}
	copyHeader(w.Header(), resp.Header)
	w.Header().Set("Content-Length", strconv.Itoa(len(respBody)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(respBody)
}

// forward sends the request to the emulator and reads its whole answer.
func (f *front) forward(ctx context.Context, r *http.Request, body []byte) (*http.Response, []byte, error) {
	u := *f.upstream
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	copyHeader(out.Header, r.Header)
	out.Host = r.Host // as the client signed it
	out.ContentLength = int64(len(body))
	resp, err := f.p.tr.RoundTrip(out)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", f.service, r.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: read the answer: %w", f.service, r.URL.Path, err)
	}
	return resp, b, nil
}

// hopHeaders are the headers that belong to one connection, not to the request.
var hopHeaders = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true, "Content-Length": true}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		if !hopHeaders[http.CanonicalHeaderKey(k)] {
			dst[k] = append([]string(nil), v...)
		}
	}
}

// reset closes the client's connection without an answer, with a TCP reset where it can.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// hold waits d, or until ctx ends; it reports whether d passed.
func hold(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
