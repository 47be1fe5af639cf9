package demosite

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestPagesAnswer304ToAConditionalGetOfTheirVersion(t *testing.T) {
	s := New(10, 3, 500)
	s.Validators = true
	s.Bare(2)
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func(path, etag, since string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		if since != "" {
			req.Header.Set("If-Modified-Since", since)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	first := get("/p/1", "", "")
	etag, lm := first.Header.Get("ETag"), first.Header.Get("Last-Modified")
	if first.StatusCode != 200 || etag == "" || lm == "" {
		t.Fatalf("first GET: %d, ETag %q, Last-Modified %q", first.StatusCode, etag, lm)
	}
	for _, tt := range []struct {
		name, etag, since string
		want              int
	}{{"If-None-Match", etag, "", 304}, {"If-Modified-Since", "", lm, 304}, {"another ETag", `"other"`, "", 200}} {
		if got := get("/p/1", tt.etag, tt.since).StatusCode; got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
	}
	s.Change(1, false)
	if r := get("/p/1", etag, lm); r.StatusCode != 200 || r.Header.Get("ETag") == etag {
		t.Errorf("after a change: status %d, ETag %q (was %q), want 200 and a new ETag", r.StatusCode, r.Header.Get("ETag"), etag)
	}
	if r := get("/p/2", "", ""); r.Header.Get("ETag") != "" || r.Header.Get("Last-Modified") != "" {
		t.Errorf("a bare page sent validators: %v", r.Header)
	}
	if got := s.Traffic(); got.Requests != 6 || got.NotModified != 2 || got.Bytes < 4*500 {
		t.Errorf("traffic = %+v, want 6 requests, 2 answered 304, and 4 bodies of 500 bytes or more", got)
	}
}
