package demosite

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEveryPageReachableAndSized(t *testing.T) {
	s := New(50, 5, 2000)
	seen := map[int]bool{0: true}
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range s.Targets(i) {
			if !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	if len(seen) != 50 {
		t.Errorf("%d of 50 pages reachable from /", len(seen))
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/p/7", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || len(body) < 2000 || !strings.Contains(string(body), "<title>Demo page 7</title>") {
		t.Errorf("page 7: status %d, %d bytes", rec.Code, len(body))
	}
	for _, p := range []string{"/p/50", "/p/0", "/p/007", "/nope"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != 404 {
			t.Errorf("%s: status %d, want 404", p, rec.Code)
		}
	}
	if s.Hits("/p/7") != 1 || s.Fetched() != 1 || len(s.Repeats()) != 0 {
		t.Errorf("hits = %d, fetched = %d, repeats = %v", s.Hits("/p/7"), s.Fetched(), s.Repeats())
	}
}
