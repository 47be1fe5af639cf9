package httpfetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// A body read with WithReserve asks for room once it passes its allowance, or before it is read
// when the response gives its size; a refusal ends the GET with the Reserve's error.
func TestABodyAsksForRoomPastItsAllowance(t *testing.T) {
	const size = 1 << 20
	page := bytes.Repeat([]byte("a"), size)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/plain":
			w.Header().Set("Content-Length", strconv.Itoa(size))
			w.Write(page)
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write(page)
			zw.Close()
		case "/small":
			w.Write(page[:1000])
		}
	}))
	defer srv.Close()
	c := newClient(t, Options{TotalTimeout: 10 * time.Second})
	refused := errors.New("no room")
	tests := []struct {
		path     string
		refuse   bool
		wantAsks int
		wantSize int64
	}{
		{"/plain", false, 1, size},
		{"/gzip", false, 1, -1},
		{"/small", false, 0, 0},
		{"/plain", true, 1, size},
	}
	for _, tt := range tests {
		t.Run(tt.path+map[bool]string{true: " refused"}[tt.refuse], func(t *testing.T) {
			asks, gotSize, gotRead := 0, int64(0), int64(0)
			ctx := WithReserve(context.Background(), 64<<10, func(_ context.Context, read, size int64) (int64, error) {
				asks++
				gotRead, gotSize = read, size
				if tt.refuse {
					return 0, refused
				}
				return math.MaxInt64, nil
			})
			resp, err := c.Get(ctx, srv.URL+tt.path)
			if tt.refuse {
				if !errors.Is(err, refused) {
					t.Fatalf("err = %v, want the Reserve's", err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if tt.wantAsks > 0 && len(resp.Body) != size {
				t.Fatalf("body of %d bytes, want %d", len(resp.Body), size)
			}
			if asks != tt.wantAsks || gotSize != tt.wantSize {
				t.Errorf("asked %d times, told size %d; want %d and %d", asks, gotSize, tt.wantAsks, tt.wantSize)
			}
			// A body of known size asks before its buffer is made; one of unknown size just past
			// the allowance.
			if tt.wantSize > 0 && gotRead != 0 {
				t.Errorf("asked at %d bytes read, want before the first read", gotRead)
			}
			if tt.wantSize < 0 && (gotRead <= 64<<10 || gotRead > 64<<10+64<<10) {
				t.Errorf("asked at %d bytes read, want just past the 64 KiB allowance", gotRead)
			}
		})
	}
}
