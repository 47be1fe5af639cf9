package awssecrets

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/crawl/web/proxysecret"
)

// DefaultTTL is how long Headers keeps a value it read: a rotated secret reaches the crawls that
// fetch meets after it within this time, and a container reads each reference at most once in it.
const DefaultTTL = 5 * time.Minute

// Headers reads the ssm: and secretsmanager: references of crawl specs' secret headers
// (secretref), and keeps each value it read for its TTL: the container's crawls share them. A
// failed read is not kept, so the next batch asks again. It is safe for concurrent use.
type Headers struct {
	src Source
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	kept map[secretref.Ref]kept
}

type kept struct {
	value string
	until time.Time
}

var _ secretref.Resolver = (*Headers)(nil)

// NewHeaders returns Headers that read from src and keep each value for ttl (0: DefaultTTL).
func NewHeaders(src Source, ttl time.Duration) *Headers {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Headers{src: src, ttl: ttl, now: time.Now, kept: map[secretref.Ref]kept{}}
}

// Resolve reads the value r names, or the one kept from a read within the TTL. Its errors name r,
// never the value.
func (h *Headers) Resolve(ctx context.Context, r secretref.Ref) (string, error) {
	now := h.now()
	h.mu.Lock()
	k, ok := h.kept[r]
	h.mu.Unlock()
	if ok && now.Before(k.until) {
		return k.value, nil
	}
	v, err := h.src.value(ctx, r.Kind, r.Name)
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", r, err)
	}
	if v == "" {
		return "", fmt.Errorf("read secret %s: the value is empty", r)
	}
	h.mu.Lock()
	h.kept[r] = kept{value: v, until: now.Add(h.ttl)}
	h.mu.Unlock()
	return v, nil
}

// Reader reads the stack's secrets with clients built from an SDK configuration: what the mains
// that run fetch pass to awsports (the others pass none and do not link the two clients).
type Reader struct{}

// Proxies is the package's Proxies.
func (Reader) Proxies(ctx context.Context, cfg aws.Config, ref proxysecret.Ref) ([]string, error) {
	return Proxies(ctx, cfg, ref)
}

// Headers returns the secret headers' reader, built from cfg, with DefaultTTL.
func (Reader) Headers(cfg aws.Config) secretref.Resolver {
	return NewHeaders(Source{SSM: ssm.NewFromConfig(cfg), Secrets: secretsmanager.NewFromConfig(cfg)}, DefaultTTL)
}
