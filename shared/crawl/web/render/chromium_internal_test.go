package render

import (
	"errors"
	"net"
	"os"
	"testing"
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
