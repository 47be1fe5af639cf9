// Package turn lets a batch handler and whoever invoked it tell each other about the batch's turn.
//
// The handler tells the invoker that, from now until it returns, it only waits: on a disk sync,
// say, and not on the network or the CPU (GiveBack). `crawl run`'s event source mappings
// (shared/local/localrun) then let a spare handler loop take the next batch meanwhile, so that a
// slow disk does not leave the crawl's request slots idle. On Lambda nothing listens, and GiveBack
// does nothing: the event source mapping scales with the queue, not with what a function waits on.
//
// The invoker tells the handler that the run is stopping (Stopping): `crawl run` after its first
// Ctrl-C lets the work in flight finish, and the handler starts no new work, so that the batch
// ends soon and nothing is done twice by the next run. On Lambda nothing stops a batch early.
package turn

import "context"

type key struct{}

// With returns a context whose GiveBack calls giveBack. The caller makes giveBack safe to call
// more than once.
func With(ctx context.Context, giveBack func()) context.Context {
	return context.WithValue(ctx, key{}, giveBack)
}

// GiveBack says that the handler running under ctx only waits from now until it returns. It does
// nothing when ctx came from no With.
func GiveBack(ctx context.Context) {
	if f, ok := ctx.Value(key{}).(func()); ok {
		f()
	}
}

type stopKey struct{}

// WithStop returns a context under which Stopping reports true once stop is closed.
func WithStop(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, stopKey{}, stop)
}

// Stopping reports whether the invoker of the handler running under ctx is stopping: the handler
// finishes what it has started (a request in flight, and storing its answer), and starts nothing
// new; the work it leaves goes back to its queue. It is false when ctx came from no WithStop.
func Stopping(ctx context.Context) bool {
	stop, ok := ctx.Value(stopKey{}).(<-chan struct{})
	if !ok {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
