//go:build race

package crawlstate

// raceEnabled: the race detector multiplies a process's memory and time, so measurements of them
// are not asserted under it.
const raceEnabled = true
