// Package turn lets a batch handler tell whoever invoked it that, from now until it returns, it
// only waits: on a disk sync, say, and not on the network or the CPU. `crawl run`'s event source
// mappings (shared/local/localrun) then let a spare handler loop take the next batch meanwhile, so that a slow
// disk does not leave the crawl's request slots idle. On Lambda nothing listens, and GiveBack does
// nothing: the event source mapping scales with the queue, not with what a function waits on.
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
