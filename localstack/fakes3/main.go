// Command fakes3 serves an in-memory S3 emulator (gofakes3) on a loopback address, for the
// integration tests on machines without Docker. localstack/emulators.sh starts it; it is not
// part of the product.
//
// Usage:
//
//	fakes3 -addr 127.0.0.1:9000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "loopback address to listen on")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "fakes3:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	faker := gofakes3.New(s3mem.New())
	srv := &http.Server{
		Addr:              addr,
		Handler:           noRangeChecksum(faker.Server()),
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	slog.Info("fakes3 listening", "addr", addr)

	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// noRangeChecksum drops x-amz-checksum-* headers from the answer to a ranged GET. gofakes3 1.2.0
// sends the whole object's checksum with the partial body, which the SDK then rejects ("checksum
// did not match"); S3 itself returns no whole-object checksum for a range, so neither does this.
func noRangeChecksum(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") == "" {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&checksumStripper{ResponseWriter: w}, r)
	})
}

// checksumStripper removes the checksum headers just before they are written.
type checksumStripper struct {
	http.ResponseWriter
	wrote bool
}

func (c *checksumStripper) WriteHeader(code int) {
	if !c.wrote {
		c.wrote = true
		for k := range c.Header() {
			if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum-") {
				c.Header().Del(k)
			}
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *checksumStripper) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}
