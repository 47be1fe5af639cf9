// Package lambdarie runs a function's bootstrap under the AWS Lambda Runtime Interface Emulator
// (aws-lambda-rie), the Runtime API that Lambda's own base images carry, and invokes it over the
// emulator's HTTP endpoint, as a Lambda service would. One emulator process serves one invocation
// at a time, like one Lambda execution environment; a Pool of them serves several at once.
//
// The emulator runs the bootstrap on the first invocation and logs
// "INIT REPORT(durationMs: …)" when the bootstrap has asked for its first event: InitDuration
// reads it.
package lambdarie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// InvokePath is the emulator's invocation endpoint (the Lambda Invoke API's path).
const InvokePath = "/2015-03-31/functions/function/invocations"

// Options start one emulator process.
type Options struct {
	// RIE is the path of the aws-lambda-rie binary.
	RIE string
	// Bootstrap is the function's executable.
	Bootstrap string
	// Env is the whole environment of the process, as KEY=value: the emulator passes it on to the
	// function, as Lambda passes a function its configured variables.
	Env []string
	// StartTimeout bounds the wait for the emulator's endpoint (default 10 s).
	StartTimeout time.Duration
}

// Process is one running emulator with its function.
type Process struct {
	URL string

	cmd         *exec.Cmd
	out         *syncBuffer
	done        chan struct{}
	invocations atomic.Int64
	client      *http.Client
}

// Start starts the emulator on free loopback ports and waits until its endpoint answers.
func Start(ctx context.Context, o Options) (*Process, error) {
	apiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(httpPort)
	cmd := exec.Command(o.RIE, "--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(apiPort), o.Bootstrap)
	cmd.Env = o.Env
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that stopping it stops the function it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.RIE, err)
	}
	p := &Process{URL: "http://" + addr, cmd: cmd, out: out, done: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{}}}
	go func() { _ = cmd.Wait(); close(p.done) }()
	timeout := o.StartTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if err := p.waitReady(ctx, timeout); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// waitReady polls the endpoint until any HTTP answer comes back.
func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/", nil)
		if err != nil {
			return err
		}
		if resp, err := p.client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("aws-lambda-rie exited at start:\n%s", p.Output())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("aws-lambda-rie did not answer on %s within %v:\n%s", p.URL, timeout, p.Output())
		}
	}
}

// FunctionError is the error a function returned (or its runtime reported) for an invocation.
type FunctionError struct {
	Type, Message string
}

func (e *FunctionError) Error() string { return "function error " + e.Type + ": " + e.Message }

// Invoke sends payload to the function and returns its response. A function error is a
// *FunctionError. The emulator answers one invocation at a time.
func (p *Process) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+InvokePath, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	p.invocations.Add(1)
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", p.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: read the response: %w", p.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke %s: %s: %s", p.URL, resp.Status, body)
	}
	// The emulator answers a function error with 200 and the error document (Lambda adds an
	// X-Amz-Function-Error header, which the emulator does not).
	var fe struct {
		ErrorType    *string `json:"errorType"`
		ErrorMessage *string `json:"errorMessage"`
	}
	if json.Unmarshal(body, &fe) == nil && fe.ErrorType != nil && fe.ErrorMessage != nil {
		return nil, &FunctionError{Type: *fe.ErrorType, Message: *fe.ErrorMessage}
	}
	return body, nil
}

// Invocations is how many invocations were sent to the process.
func (p *Process) Invocations() int64 { return p.invocations.Load() }

var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// InitDuration is the init duration the emulator reported, once the first invocation has run
// the bootstrap; false before that.
func (p *Process) InitDuration() (time.Duration, bool) {
	m := initReport.FindStringSubmatch(p.Output())
	if m == nil {
		return 0, false
	}
	ms, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}

// Output is what the emulator and the function wrote so far.
func (p *Process) Output() string { return p.out.String() }

// Close stops the emulator and its function and waits for them.
func (p *Process) Close() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Pool is several processes of one function, each serving one invocation at a time.
type Pool struct {
	Procs []*Process
	free  chan *Process
}

// StartPool starts n processes, process i with opts(i).
func StartPool(ctx context.Context, n int, opts func(i int) Options) (*Pool, error) {
	pl := &Pool{free: make(chan *Process, n)}
	for i := range n {
		p, err := Start(ctx, opts(i))
		if err != nil {
			pl.Close()
			return nil, err
		}
		pl.Procs = append(pl.Procs, p)
		pl.free <- p
	}
	return pl, nil
}

// Invoke sends payload to a process that is not busy, waiting for one if need be.
func (pl *Pool) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var p *Process
	select {
	case p = <-pl.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { pl.free <- p }()
	return p.Invoke(ctx, payload)
}

// Invocations is how many invocations the pool's processes served.
func (pl *Pool) Invocations() int64 {
	var n int64
	for _, p := range pl.Procs {
		n += p.Invocations()
	}
	return n
}

// Output is what every process wrote, one after the other.
func (pl *Pool) Output() string {
	var b bytes.Buffer
	for i, p := range pl.Procs {
		fmt.Fprintf(&b, "--- process %d (%s)\n%s", i, p.URL, p.Output())
	}
	return b.String()
}

// Close stops every process.
func (pl *Pool) Close() {
	for _, p := range pl.Procs {
		p.Close()
	}
}

// freePort returns a loopback port that nothing listened on a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ErrNoInit says that a process reported no init duration.
var ErrNoInit = errors.New("the runtime emulator reported no INIT REPORT")

// syncBuffer is a bytes.Buffer safe for the process's writers and the readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
