package fileblob

import (
	"sync"
	"sync/atomic"
)

// dirSyncs makes each directory sync count for every object moved into the directory before the
// sync began. An object whose move such a sync covers, done or under way, does not sync the
// directory again: a fetch batch's WARC file and its index share one sync, and so do the batches
// that sync the same directory at once (docs/bench-history.md, round seventeen).
type dirSyncs struct {
	moves atomic.Uint64 // the objects moved into place so far, in this process

	mu   sync.Mutex
	dirs map[string]*dirState
}

// dirState is one directory's syncs.
type dirState struct {
	synced  uint64   // every move up to this one is durable
	running *dirSync // the sync under way, or nil
}

// dirSync is one sync of a directory, covering the moves up to upTo.
type dirSync struct {
	upTo uint64
	done chan struct{}
	err  error
}

// moved counts an object moved (renamed or linked) into place, and returns its ticket for sync.
func (d *dirSyncs) moved() uint64 { return d.moves.Add(1) }

// sync returns once a sync of dir that began after the move with the given ticket has succeeded,
// running one if none has; or with the error of the sync that should have covered it.
func (d *dirSyncs) sync(dir string, ticket uint64) error {
	for {
		d.mu.Lock()
		st := d.dirs[dir]
		if st == nil {
			if d.dirs == nil {
				d.dirs = map[string]*dirState{}
			}
			st = &dirState{}
			d.dirs[dir] = st
		}
		if st.synced >= ticket {
			d.mu.Unlock()
			return nil
		}
		if r := st.running; r != nil {
			d.mu.Unlock()
			<-r.done
			if r.upTo >= ticket {
				return r.err
			}
			continue // it began before the move: another sync is needed
		}
		r := &dirSync{upTo: d.moves.Load(), done: make(chan struct{})}
		st.running = r
		d.mu.Unlock()

		r.err = syncDir(dir)
		d.mu.Lock()
		if r.err == nil {
			st.synced = max(st.synced, r.upTo)
		}
		st.running = nil
		d.mu.Unlock()
		close(r.done)
		return r.err
	}
}
