//go:build race

package scheduler_test

// raceEnabled: the race detector multiplies a test's time, so the largest inputs are smaller
// under it.
const raceEnabled = true
