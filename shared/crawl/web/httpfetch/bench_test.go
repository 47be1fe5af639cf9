package httpfetch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkGet measures pages per second against a loopback server, in parallel: a 4 KB page and
// a 20 KB one, both sent chunked (no Content-Length), as most dynamic pages are.
func BenchmarkGet(b *testing.B) {
	for _, links := range []int{200, 1000} {
		page := "<html><body>" + strings.Repeat("<a href=\"/x\">x</a>", links) + "</body></html>"
		b.Run(strconv.Itoa(len(page)/1000)+"KB", func(b *testing.B) { benchmarkGet(b, page) })
	}
}

func benchmarkGet(b *testing.B, page string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, page)
	}))
	defer srv.Close()
	c, err := New(Options{UserAgent: testUA, Guard: loopbackGuard()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Get(context.Background(), srv.URL+"/page")
			if err != nil || len(resp.Body) != len(page) {
				b.Errorf("get: %v", err)
				return
			}
		}
	})
}
