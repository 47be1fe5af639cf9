package sqsbatch

import "time"

// workers run functions on goroutines that, when a function returns, wait up to idleFor for the
// next one instead of ending. A record's handler grows its goroutine's stack (SQLite, the HTML
// tokenizer, gzip); with a new goroutine for every record, copying stacks as they grew was 4% of
// a crawl's CPU (docs/bench-history.md, round seventeen).
type workers struct {
	work    chan func()
	idleFor time.Duration
}

// pool serves every Runner: records of all batches share its goroutines.
var pool = newWorkers(5 * time.Second)

func newWorkers(idleFor time.Duration) *workers {
	return &workers{work: make(chan func()), idleFor: idleFor}
}

// Go runs fn on a waiting goroutine, or on a new one when none waits. fn must not panic.
func (w *workers) Go(fn func()) {
	select {
	case w.work <- fn:
	default:
		go w.loop(fn)
	}
}

func (w *workers) loop(fn func()) {
	idle := time.NewTimer(w.idleFor)
	defer idle.Stop()
	for {
		fn()
		idle.Reset(w.idleFor)
		select {
		case fn = <-w.work:
		case <-idle.C:
			return
		}
	}
}
