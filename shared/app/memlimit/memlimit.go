// Package memlimit sets the Go runtime's soft memory limit of a Lambda function from the memory
// it is given. Without a limit the collector lets the heap grow to twice what it found live, and a
// function whose live heap passes half its memory is killed by Lambda instead of collecting
// harder. Each function's main calls Set before it builds anything, so the limit holds for any
// deploy, the stack's or another.
package memlimit

import (
	"fmt"
	"runtime/debug"
	"strconv"
)

// Share is the part of the function's memory the Go runtime may use, in percent: the rest is for
// what the limit does not count (the executable's pages, and the kernel's buffers of the
// process's sockets and files).
const Share = 85

// For is the memory limit of a function of memoryMB megabytes.
func For(memoryMB int) int64 { return int64(memoryMB) << 20 * Share / 100 }

// Set sets the runtime's memory limit from AWS_LAMBDA_FUNCTION_MEMORY_SIZE, as getenv reads the
// environment, unless GOMEMLIMIT is set (the user's choice stands, and the runtime has read it).
// It returns the limit set (0: none), or an error when the memory size is not a whole number of
// megabytes. Outside Lambda, where the variable is unset, it sets nothing.
func Set(getenv func(string) string) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	raw := getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
	if raw == "" {
		return 0, nil
	}
	mb, err := strconv.Atoi(raw)
	if err != nil || mb <= 0 {
		return 0, fmt.Errorf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE=%q: not a whole number of MB", raw)
	}
	limit := For(mb)
	debug.SetMemoryLimit(limit)
	return limit, nil
}
