package fetcher_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/app/memlimit"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/web/httpfetch"
	"github.com/crawlstack/crawlstack/shared/crawl/web/netguard"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
	"github.com/crawlstack/crawlstack/shared/handler/fetcher"
	"github.com/crawlstack/crawlstack/shared/testkit/embedtest"
)

// bigSite serves large HTML pages at /big/<n>, with their Content-Length, and counts the GETs of
// each. With gzip, the odd pages come gzipped and chunked: their size is not known before they
// are read.
type bigSite struct {
	srv  *httptest.Server
	page []byte
	gz   []byte
	mu   sync.Mutex
	hits map[string]int
}

// newBigSite serves pages of size bytes: words drawn at random from a small vocabulary, which
// compress to about a third, as HTML text does.
func newBigSite(t *testing.T, size int) *bigSite {
	s := &bigSite{page: bigPage(size), hits: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/big/") {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/big/")); s.gz != nil && n%2 == 1 {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(s.gz) // no Content-Length: chunked
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(s.page)))
		w.Write(s.page)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func bigPage(size int) []byte {
	words := strings.Fields("the of and to in is was for on that with as by at from crawl page link archive " +
		"record server request response header body table queue message lambda memory budget")
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.WriteString("<html><body><p>")
	for b.Len() < size-len("</p></body></html>")-16 {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
		if r.IntN(12) == 0 {
			fmt.Fprintf(&b, "%d ", r.Uint32())
		}
	}
	b.WriteString("</p></body></html>")
	return b.Bytes()
}

// batch returns a batch of one message for each of n pages of the site, admitted.
func (s *bigSite) batch(e *env, n int) events.SQSEvent {
	var ev events.SQSEvent
	for i := range n {
		rec := e.record("m"+strconv.Itoa(i), "/", 1)
		m := message.Fetch{Header: message.Header{Crawl: crawl}, Target: message.Target{
			URL: s.srv.URL + "/big/" + strconv.Itoa(i), Root: s.srv.URL + "/", Depth: 1}}
		body, err := message.Encode(m)
		if err != nil {
			e.t.Fatal(err)
		}
		rec.Body = body
		e.admit(m.URL, m.Root, m.Depth)
		ev.Records = append(ev.Records, rec)
	}
	return ev
}

// lambdaHandler is the handler as a Lambda function has it, on e's state, queue and blobs: no
// handoff, and a client whose fetch timeout is the stack's.
func (e *env) lambdaHandler(cfg fetcher.Config) *fetcher.Handler {
	guard := netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
	client, err := httpfetch.New(httpfetch.Options{UserAgent: userAgent, Guard: guard, TotalTimeout: 30 * time.Second,
		MaxDecodedBytes: cfg.MaxDecodedBytes})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(client.Close)
	cfg.FetchQueue, cfg.ParseQueue = fetchQ, parseQ
	cfg.HostRPS, cfg.HostConcurrency, cfg.MaxQuickRetry = 0, 0, 0
	return fetcher.New(cfg, withState(e.state, fetcher.Deps{HTTP: client, Robots: robots.New(client, userAgent, time.Hour),
		Scope: scope.DefaultRules(), Guard: guard, Pages: e.blobs, Send: e.send,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: e.clock.now}))
}

// checkStoredOnce checks that each of the n pages was fetched once, recorded fetched, and can be
// read back whole from its WARC file; it returns the files they are in.
func (s *bigSite) checkStoredOnce(e *env, n int) map[string]bool {
	e.t.Helper()
	files := map[string]bool{}
	for i := range n {
		path := "/big/" + strconv.Itoa(i)
		s.mu.Lock()
		hits := s.hits[path]
		s.mu.Unlock()
		if hits != 1 {
			e.t.Errorf("%s: %d GETs, want 1", path, hits)
		}
		u, err := e.state.Get(context.Background(), crawl, keyOf(e.t, s.srv.URL+path))
		if err != nil {
			e.t.Fatal(err)
		}
		if u.State != crawlstate.Fetched || u.Page == nil {
			e.t.Errorf("%s: state %q, page %v; want fetched, with its page", path, u.State, u.Page)
			continue
		}
		files[u.Page.WARCKey] = true
		raw, err := e.blobs.GetRange(context.Background(), u.Page.WARCKey, u.Page.Offset, u.Page.Length)
		if err != nil {
			e.t.Fatalf("%s: read its record: %v", path, err)
		}
		p, err := warcfile.Decode(raw)
		if err != nil || !bytes.Equal(p.Body, s.page) {
			e.t.Errorf("%s: its record decodes to %d bytes (err %v), want the %d served", path, len(p.Body), err, len(s.page))
		}
	}
	return files
}

// A batch of pages larger than its memory budget holds is stored in parts, each page fetched
// once and readable from its file, in a few files, not one a page; half of them come without a
// size, and take the most a page may hold while they are read.
func TestABatchOverItsBudgetIsStoredInParts(t *testing.T) {
	const pages, size = 24, 600 << 10
	e := newEnv(t, nil)
	s := newBigSite(t, size)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(s.page)
	zw.Close()
	s.gz = gz.Bytes()
	cfg := fetcher.DefaultConfig()
	cfg.Concurrency, cfg.MaxDecodedBytes, cfg.MemoryBudget = pages, 1<<20, 8<<20
	h := e.lambdaHandler(cfg)
	if failed := embedtest.Failures(t, h.Handle, s.batch(e, pages).Records...); len(failed) > 0 {
		t.Fatalf("failed: %v", failed)
	}
	files := s.checkStoredOnce(e, pages)
	// 24 pages of about 200 KiB of record each, held twice, fill half of 8 MiB about every 10: a
	// few parts, not a file a page (23 or 24 files, when a GET that waited for room a moment stored
	// the pages kept so far, and each page kept while it waited was stored alone).
	if len(files) < 2 || len(files) > pages/2 {
		t.Errorf("the pages are in %d WARC file(s), want them stored in a few parts (2 to %d)", len(files), pages/2)
	}
}

// The batch TestABatchOfLargePagesFitsInLambdasMemory measures: as many pages as a batch of the
// stack's fetch function holds (its BatchSize and BatchConcurrency), each near the 10 MiB body cap,
// at once, in the stack's 512 MB.
const (
	largePages    = 100
	largePageSize = 8 << 20
	lambdaMB      = 512
)

// childSite names the site the child process fetches from (its URL): set, the test binary is the
// child, which runs TestLargeBatchChild.
const childSite = "FETCHER_MEMORY_SITE"

// A batch of 100 pages of 8 MiB completes in a process of 512 MB, as the fetch function sees it:
// its memory limit set by memlimit.Set, the budget by MemoryBudgetFor. The batch runs in a child
// process, built without the race detector, whose peak RSS is measured; FETCHER_MEMORY_RUNS runs
// it that many times (the median is held to the bound).
func TestABatchOfLargePagesFitsInLambdasMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package's tests and fetches 800 MiB")
	}
	s := newBigSite(t, largePageSize)
	bin := filepath.Join(t.TempDir(), "fetcher.test")
	build := exec.Command("go", "test", "-c", "-race=false", "-o", bin, ".") // the race detector's memory is not Lambda's
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the child: %v\n%s", err, out)
	}
	runs := 1
	if n, err := strconv.Atoi(os.Getenv("FETCHER_MEMORY_RUNS")); err == nil && n > 0 {
		runs = n
	}
	var peaks []int64
	for range runs {
		s.mu.Lock()
		clear(s.hits)
		s.mu.Unlock()
		peaks = append(peaks, runChild(t, bin, s.srv.URL))
	}
	slices.Sort(peaks)
	median := peaks[len(peaks)/2]
	t.Logf("peak RSS of %d pages of %d MiB in %d MB: %v MiB (median %d MiB)", largePages, largePageSize>>20, lambdaMB,
		mib(peaks), median>>20)
	if median > lambdaMB<<20 {
		t.Errorf("peak RSS %d MiB, over the function's %d MB", median>>20, lambdaMB)
	}
}

func mib(bs []int64) []int64 {
	out := make([]int64, len(bs))
	for i, b := range bs {
		out[i] = b >> 20
	}
	return out
}

// runChild runs the batch in the child and returns its peak RSS in bytes.
func runChild(t *testing.T, bin, site string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, bin, "-test.run=^TestLargeBatchChild$", "-test.count=1", "-test.v")
	child.Env = append(os.Environ(), childSite+"="+site, "AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(lambdaMB))
	child.Env = slices.DeleteFunc(child.Env, func(kv string) bool { return strings.HasPrefix(kv, "GOMEMLIMIT=") })
	out, err := child.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestLargeBatchChild") {
		t.Fatalf("the child failed: %v\n%s", err, out)
	}
	ru, ok := child.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no resource usage for the child")
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss // bytes on macOS
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}

// TestLargeBatchChild is the child of TestABatchOfLargePagesFitsInLambdasMemory: it runs only in
// the process that test starts.
func TestLargeBatchChild(t *testing.T) {
	site := os.Getenv(childSite)
	if site == "" {
		t.Skip("the child of TestABatchOfLargePagesFitsInLambdasMemory")
	}
	if _, err := memlimit.Set(os.Getenv); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil)
	s := &bigSite{srv: &httptest.Server{URL: site}}
	cfg := fetcher.DefaultConfig()
	cfg.Concurrency = largePages // the stack's BatchConcurrency
	cfg.MemoryBudget = fetcher.MemoryBudgetFor(lambdaMB)
	h := e.lambdaHandler(cfg)
	ev := s.batch(e, largePages)
	if failed := embedtest.Failures(t, h.Handle, ev.Records...); len(failed) > 0 {
		t.Fatalf("failed: %v", failed)
	}
	for i := range largePages {
		u, err := e.state.Get(context.Background(), crawl, keyOf(t, site+"/big/"+strconv.Itoa(i)))
		if err != nil || u.State != crawlstate.Fetched {
			t.Fatalf("page %d: %q (err %v), want fetched", i, u.State, err)
		}
	}
}
