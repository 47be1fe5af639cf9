package awse2e

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/crawlstack/crawlstack/shared/aws/dynamotable"
	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/testkit/awstest"
	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"
)

// newLeaseStore returns a crawl state on a fresh DynamoDB table, with one URL admitted, and the
// URL's key; opts are the store's.
func newLeaseStore(t *testing.T, opts ...crawlstate.Option) (*crawlstate.Store, string, string) {
	t.Helper()
	cfg := awstest.Config(t)
	awstest.RequireService(t, "DYNAMODB")
	name := awstest.UniqueName(t, "e2e")
	client := dynamodb.NewFromConfig(cfg)
	tb := dynamotable.New(client, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tb.CreateTable(ctx, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &name}); err != nil {
			t.Logf("delete table %s: %v", name, err)
		}
	})
	const raw = "http://127.0.0.1:8080/leased"
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	key := urlnorm.Key(u.String())
	st := crawlstate.New(tb, opts...)
	const crawl = "lease-test"
	if r, err := st.Admit(ctx, crawl, key, u.String(), u.String(), 0, "L"); err != nil || r != crawlstate.Admitted {
		t.Fatalf("admit: %v, %v", r, err)
	}
	return st, crawl, key
}

// TestIntegrationLeaseExpiresAndIsReclaimed moves the clock of the crawl state over a claim's
// lease on DynamoDB: another owner is refused while the lease lives and takes the URL over once it
// has expired, and the first owner can then neither claim nor finish it.
func TestIntegrationLeaseExpiresAndIsReclaimed(t *testing.T) {
	start := time.Now()
	var at time.Duration
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return start.Add(at) }
	st, crawl, key := newLeaseStore(t, crawlstate.WithClock(clock))
	ctx := context.Background()
	const lease = time.Minute
	steps := []struct {
		name  string
		at    time.Duration
		owner string
		want  bool // the claim succeeds
	}{
		{"A claims the queued URL", 0, "A", true},
		{"B is refused while A's lease lives", 30 * time.Second, "B", false},
		{"B is refused a millisecond before the lease ends", lease - time.Millisecond, "B", false},
		{"B takes over a millisecond after the lease ended", lease + time.Millisecond, "B", true},
		{"A is refused now that B holds a live lease", lease + 2*time.Second, "A", false},
		{"B may claim again (its own redelivery)", lease + 3*time.Second, "B", true},
	}
	for _, s := range steps {
		mu.Lock()
		at = s.at
		mu.Unlock()
		u, err := st.Claim(ctx, crawl, key, s.owner, lease)
		switch {
		case s.want && err != nil:
			t.Errorf("%s: claim by %s at +%v: %v", s.name, s.owner, s.at, err)
		case s.want && (u.Owner != crawlstate.OwnerTag(s.owner) || !u.Lease.Equal(start.Add(s.at+lease).Truncate(time.Millisecond))):
			t.Errorf("%s: claimed item has owner %q and lease %v, want %q and %v", s.name, u.Owner, u.Lease,
				s.owner, start.Add(s.at+lease))
		case !s.want && !errors.Is(err, crawlstate.ErrClaimed):
			t.Errorf("%s: claim by %s at +%v = %v, want %v", s.name, s.owner, s.at, err, crawlstate.ErrClaimed)
		}
	}
	// A, whose lease ran out, cannot record a result over B's claim; B can.
	if ok, err := st.Finish(ctx, crawl, key, "A", crawlstate.Queued, crawlstate.Fetched, nil); err != nil || ok {
		t.Errorf("finish by the expired owner A = %v, %v; want false, nil", ok, err)
	}
	if ok, err := st.Finish(ctx, crawl, key, "B", crawlstate.Queued, crawlstate.Fetched, nil); err != nil || !ok {
		t.Errorf("finish by the owner B = %v, %v; want true, nil", ok, err)
	}
	mu.Lock()
	at = 10 * lease
	mu.Unlock()
	if _, err := st.Claim(ctx, crawl, key, "C", lease); !errors.Is(err, crawlstate.ErrClaimed) {
		t.Errorf("claim of a fetched URL = %v, want %v", err, crawlstate.ErrClaimed)
	}
	if u, err := st.Get(ctx, crawl, key); err != nil || u.State != crawlstate.Fetched {
		t.Errorf("the URL is %+v (err %v), want fetched (by B: A's finish was refused)", u, err)
	}
}

// TestIntegrationLeaseExpiresInRealTime claims with a short lease on the real clock and polls
// (with a deadline) with another owner: every claim before the lease's end is refused, and one
// after it succeeds.
func TestIntegrationLeaseExpiresInRealTime(t *testing.T) {
	st, crawl, key := newLeaseStore(t)
	ctx := context.Background()
	const lease = 1500 * time.Millisecond
	a, err := st.Claim(ctx, crawl, key, "A", lease)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(lease + 10*time.Second)
	refused := 0
	for {
		before := time.Now()
		b, err := st.Claim(ctx, crawl, key, "B", lease)
		if err == nil {
			// A take-over decides after a round trip or two (the claim's refusal, a read of A's
			// outcomes): what must not happen is a claim that came back before A's lease ended.
			if after := time.Now(); after.Before(a.Lease) {
				t.Errorf("B's claim came back at %v, before A's lease ended at %v", after, a.Lease)
			}
			if b.Owner != crawlstate.OwnerTag("B") {
				t.Errorf("claimed item has owner %q, want B", b.Owner)
			}
			break
		}
		if !errors.Is(err, crawlstate.ErrClaimed) {
			t.Fatal(err)
		}
		// A refusal after the lease ended (with a margin for the clock's millisecond rounding)
		// means the lease did not expire.
		if before.After(a.Lease.Add(50 * time.Millisecond)) {
			t.Fatalf("B was refused at %v, after A's lease ended at %v", before, a.Lease)
		}
		refused++
		if time.Now().After(deadline) {
			t.Fatal("B never claimed the URL")
		}
		e2etest.PollPause()
	}
	if refused == 0 {
		t.Error("B was never refused: the test proved nothing about the live lease")
	}
}
