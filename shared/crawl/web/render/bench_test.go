package render_test

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/web/render"
	"github.com/crawlstack/crawlstack/shared/demo/jssite"
)

// BenchmarkRender renders the JS site's pages (a fetch of its JSON each, then links and text
// built by the script) with 1 and 4 tabs at once: pages a second, and the browser's peak
// proportional set size (PSS: shared pages split among their processes, so the sum does not
// count them twice) of every process under this one, Chromium's browser, renderer, GPU and
// utility processes, as browser-MB.
func BenchmarkRender(b *testing.B) {
	c := sharedBrowser(b)
	site := jssite.New(jssite.Options{Pages: 40})
	defer site.Close()
	l := &benchLoader{}
	for _, tabs := range []int{1, 4} {
		b.Run("tabs="+strconv.Itoa(tabs), func(b *testing.B) {
			var next atomic.Int64
			var peak atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			start := time.Now()
			for range tabs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						n := int(next.Add(1)) - 1
						if n >= b.N {
							return
						}
						i := n % site.Pages()
						res, err := c.Render(context.Background(), render.Request{Page: render.Page{URL: site.PageURL(i),
							Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: site.HTML(i)},
							Wait: render.Wait{NetworkIdle: true}, Loader: l})
						if err != nil {
							b.Errorf("page %d: %v", i, err)
							return
						}
						if !strings.Contains(string(res.DOM), jssite.Text(i)) {
							b.Errorf("page %d (timed out %v): DOM without its text:\n%s", i, res.TimedOut, res.DOM)
							return
						}
						if n%5 == 0 {
							if rss := treePSS(os.Getpid()); rss > peak.Load() {
								peak.Store(rss)
							}
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pages/s")
			b.ReportMetric(float64(peak.Load())/(1<<20), "browser-MB")
		})
	}
}

// benchLoader loads from loopback with a plain client: the bench measures the browser.
type benchLoader struct{}

func (benchLoader) Load(ctx context.Context, req *http.Request) (*http.Response, error) {
	r, err := http.NewRequestWithContext(ctx, req.Method, req.URL.String(), nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(r)
}

// treePSS is the proportional set size of every process descending from pid, itself excluded, read
// from /proc (0 where there is none).
func treePSS(pid int) int64 {
	parent := map[int]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		raw, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its closing paren.
		s := string(raw)
		rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		p, _ := strconv.Atoi(strings.Fields(s)[0])
		if len(rest) > 1 {
			parent[p], _ = strconv.Atoi(rest[1])
		}
	}
	var total int64
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				total += pssOf(p)
				break
			}
		}
	}
	return total
}

func pssOf(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
