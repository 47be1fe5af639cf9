package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile is the file of a state directory that a crawl run holds locked while it runs.
const lockFile = "run.lock"

// lockWait is how long lockState waits for a lock held for a moment (runActive's look) before it
// says another run holds it.
const lockWait = time.Second

// lockState takes the state directory for this process alone, so that crawl run may take back
// what an earlier run left in flight: no other run is working on it. The lock is a file lock,
// which the kernel releases when the process ends, even by kill -9.
func lockState(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the state directory: %w", err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // crawl status looks at the lock for a moment (runActive)
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another crawl run is using the state directory %s: let it end, or give this one another --state", dir)
		}
		return nil, fmt.Errorf("lock the state directory %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// runActive reports whether a crawl run holds the state directory dir now. It takes a shared lock
// for a moment: a run that starts meanwhile waits for it (lockState).
func runActive(dir string) bool {
	f, err := os.Open(filepath.Join(dir, lockFile))
	if err != nil {
		return false // no run ever took it
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK)
}
