//go:build !race

package scheduler_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
