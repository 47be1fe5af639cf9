package httpfetch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkGet measures pages per second against a loopback server, in parallel.
func BenchmarkGet(b *testing.B) {
	page := "<html><body>" + strings.Repeat("<a href=\"/x\">x</a>", 200) + "</body></html>"
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
