package turn_test

import (
	"context"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/turn"
)

func TestGiveBackCallsTheInvokersFunction(t *testing.T) {
	calls := 0
	ctx := turn.With(context.Background(), func() { calls++ })
	turn.GiveBack(ctx)
	turn.GiveBack(context.WithoutCancel(ctx)) // a derived context carries it too
	turn.GiveBack(context.Background())       // nobody listens: nothing happens
	if calls != 2 {
		t.Fatalf("giveBack called %d times, want 2", calls)
	}
}

func TestStoppingOnceTheInvokerStops(t *testing.T) {
	stop := make(chan struct{})
	ctx := turn.WithStop(context.Background(), stop)
	if turn.Stopping(ctx) || turn.Stopping(context.Background()) {
		t.Fatal("stopping before the invoker stops")
	}
	close(stop)
	if !turn.Stopping(ctx) || !turn.Stopping(context.WithoutCancel(ctx)) {
		t.Fatal("not stopping once the invoker stopped")
	}
	if turn.Stopping(context.Background()) {
		t.Fatal("a context from no WithStop is stopping")
	}
}
