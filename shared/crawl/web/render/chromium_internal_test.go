package render

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Close removes the profile directory the browser ran with and stops the refusing proxy.
func TestCloseRemovesTheProfile(t *testing.T) {
	c, err := NewChromium(Options{})
	if err != nil {
		if errors.Is(err, ErrNoBrowser) && os.Getenv("CRAWL_TEST_REQUIRE_CHROMIUM") != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	if _, err := os.Stat(c.dataDir); err != nil {
		t.Fatalf("profile directory while running: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("profile directory after Close: %v: want it gone", err)
	}
	if conn, err := dialSink(c.sink.addr()); err == nil {
		conn.Close()
		t.Errorf("the refusing proxy still accepts after Close")
	}
}

func dialSink(addr string) (interface{ Close() error }, error) {
	return net.Dial("tcp", addr)
}

// A browser killed in the middle of a render (its sub-request in the Loader's hands) ends that
// render with an error at once, not at the time cap, and every later render too.
func TestRenderFailsWhenTheBrowserDies(t *testing.T) {
	c, err := NewChromium(Options{})
	if err != nil {
		if errors.Is(err, ErrNoBrowser) && os.Getenv("CRAWL_TEST_REQUIRE_CHROMIUM") != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer c.Close()
	inLoader := make(chan struct{}, 1)
	hang := loaderFunc(func(ctx context.Context, _ *http.Request) (*http.Response, error) {
		inLoader <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	req := Request{Page: Page{URL: "http://127.0.0.1:9/", Body: []byte(`<script>fetch("/hang")</script>`)},
		Wait: Wait{NetworkIdle: true, Max: time.Minute}, Loader: hang}
	done := make(chan error, 1)
	go func() {
		_, err := c.Render(context.Background(), req)
		done <- err
	}()
	select {
	case <-inLoader:
	case err := <-done:
		t.Fatalf("render ended before its sub-request: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the page's sub-request never reached the Loader")
	}
	if err := chromedp.FromContext(c.browser).Browser.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("render of a killed browser: no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("render still running 30 s after its browser was killed (its cap is a minute)")
	}
	if _, err := c.Render(context.Background(), req); err == nil {
		t.Error("render after the browser died: no error")
	}
}

type loaderFunc func(ctx context.Context, req *http.Request) (*http.Response, error)

func (f loaderFunc) Load(ctx context.Context, req *http.Request) (*http.Response, error) {
	return f(ctx, req)
}
