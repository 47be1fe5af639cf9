// Command fakes3 serves an in-memory S3 emulator (gofakes3) on a loopback address, for the
// integration tests on machines without Docker. localstack/emulators.sh starts it; it is not
// part of the product.
//
// With -sqs, it also sends S3 event notifications to SQS queues, as S3 does: a bucket's
// notification configuration (PutBucketNotificationConfiguration, which CDK's notification
// handler calls at deploy time) names the queues and the key filters, and every object created
// under a filter sends S3's ObjectCreated event to its queue (see notifier).
//
// Usage:
//
//	fakes3 -addr 127.0.0.1:9000 -sqs http://127.0.0.1:9324
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "loopback address to listen on")
	sqsURL := flag.String("sqs", "", "the SQS endpoint that S3 event notifications go to (empty: no notifications)")
	region := flag.String("region", "us-east-1", "the region of the SQS endpoint and of the events")
	flag.Parse()
	if err := run(*addr, *sqsURL, *region); err != nil {
		fmt.Fprintln(os.Stderr, "fakes3:", err)
		os.Exit(1)
	}
}

func run(addr, sqsURL, region string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	backend := s3mem.New()
	faker := gofakes3.New(backend)
	var handler http.Handler = noRangeChecksum(faker.Server())
	if sqsURL != "" {
		handler = newNotifier(backend, newSQS(sqsURL, region), region, handler)
	}
	srv := &http.Server{
		Addr:              addr,
		Handler:           ownedBucket(backend, handler),
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

// ownedBucket answers a CreateBucket for a bucket that exists with S3's 409
// BucketAlreadyOwnedByYou. gofakes3 1.2.0 answers BucketAlreadyExists (a bucket of another
// account), but this emulator has one account, so every existing bucket is the caller's own.
func ownedBucket(b gofakes3.Backend, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.Trim(r.URL.Path, "/")
		if r.Method == http.MethodPut && name != "" && !strings.Contains(name, "/") && r.URL.RawQuery == "" {
			if exists, err := b.BucketExists(name); err == nil && exists {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusConflict)
				fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>BucketAlreadyOwnedByYou</Code>"+
					"<Message>Your previous request to create the named bucket succeeded and you already own it.</Message>"+
					"<BucketName>%s</BucketName></Error>", html.EscapeString(name))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
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

// newSQS is an SQS client for the emulator at endpoint, with the emulators' static credentials.
func newSQS(endpoint, region string) *sqs.Client {
	return sqs.New(sqs.Options{Region: region, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
}
