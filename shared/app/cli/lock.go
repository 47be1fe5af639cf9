package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockState takes the state directory for this process alone, so that crawl run may take back
// what an earlier run left in flight: no other run is working on it. The lock is a file lock,
// which the kernel releases when the process ends, even by kill -9.
func lockState(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, "run.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the state directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another crawl run is using the state directory %s: let it end, or give this one another --state", dir)
		}
		return nil, fmt.Errorf("lock the state directory %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
