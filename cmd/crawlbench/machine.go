package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTimes are the machine's CPU times from /proc/stat, in clock ticks, summed over all cores.
type cpuTimes struct {
	total, idle, iowait uint64
}

// readCPUTimes reads the machine's CPU times; ok is false where /proc/stat is missing (not Linux).
func readCPUTimes() (cpuTimes, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuTimes{}, false
	}
	t, err := parseCPULine(line)
	return t, err == nil
}

// parseCPULine parses the aggregate "cpu" line of /proc/stat: user nice system idle iowait irq
// softirq steal (and guest times, which user and nice already include).
func parseCPULine(line string) (cpuTimes, error) {
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("not the cpu line of /proc/stat: %q", line)
	}
	var t cpuTimes
	for i, f := range fields[1:min(len(fields), 9)] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("cpu line field %d: %w", i+1, err)
		}
		t.total += n
		switch i {
		case 3:
			t.idle = n
		case 4:
			t.iowait = n
		}
	}
	if t.total == 0 {
		return cpuTimes{}, errors.New("cpu line: no time counted")
	}
	return t, nil
}

// shares returns how busy the machine was between before and after, and how much of the time the
// cores waited for I/O with nothing else to run, both in percent of all cores' time.
func shares(before, after cpuTimes) (busy, iowait float64) {
	total := float64(after.total - before.total)
	if total <= 0 {
		return 0, 0
	}
	idle := float64(after.idle-before.idle) + float64(after.iowait-before.iowait)
	return 100 * (1 - idle/total), 100 * float64(after.iowait-before.iowait) / total
}
