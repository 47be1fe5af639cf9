package sqsbatch

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// goroutineID is the running goroutine's number, from the first line of its stack trace.
func goroutineID() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := bytes.Fields(buf) // "goroutine 18 [running]: ..."
	id, _ := strconv.Atoi(string(f[1]))
	return id
}

// eventually polls cond until it holds or a minute has passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatalf("still not so after a minute: %s", what)
		}
	}
}

func TestAWorkerThatIsDoneRunsTheNextFunction(t *testing.T) {
	w := newWorkers(time.Minute)
	first := make(chan int)
	w.Go(func() { first <- goroutineID() })
	id := <-first
	second := make(chan int, 1)
	// Go starts a new goroutine while no worker waits: offer the function until the one that
	// ran the first takes it.
	eventually(t, "the worker waits for more", func() bool {
		select {
		case w.work <- func() { second <- goroutineID() }:
			return true
		default:
			return false
		}
	})
	if got := <-second; got != id {
		t.Errorf("the second function ran on goroutine %d, the first on %d", got, id)
	}
}

func TestBusyWorkersDoNotHoldUpTheNextFunction(t *testing.T) {
	w := newWorkers(time.Minute)
	const n = 5
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	for range n {
		w.Go(func() { started.Done(); <-release })
	}
	done := make(chan struct{})
	go func() { started.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("not every function started while the others ran")
	}
	close(release)
}

func TestAnIdleWorkerEnds(t *testing.T) {
	before := runtime.NumGoroutine()
	w := newWorkers(time.Millisecond)
	ran := make(chan struct{})
	w.Go(func() { close(ran) })
	<-ran
	eventually(t, "the idle worker ended", func() bool { return runtime.NumGoroutine() <= before })
}
