package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssSampler reads a process's resident set from /proc every interval while it runs, so the
// benchmark can show how memory grows over a crawl, not only its peak.
type rssSampler struct {
	mu      sync.Mutex
	samples []rssSample
	stop    chan struct{}
	done    chan struct{}
}

type rssSample struct {
	at  time.Duration
	mib float64
}

// sampleRSS starts sampling process pid every interval; Stop ends it.
func sampleRSS(pid int, interval time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if mib, err := readRSS(pid); err == nil {
				s.mu.Lock()
				s.samples = append(s.samples, rssSample{time.Since(start), mib})
				s.mu.Unlock()
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns the highest sample in each tenth of the time sampled (zero
// for a tenth with none, or where /proc is missing).
func (s *rssSampler) Stop() [timelineSlices]float64 {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [timelineSlices]float64
	if len(s.samples) == 0 {
		return out
	}
	span := s.samples[len(s.samples)-1].at
	for _, x := range s.samples {
		k := timelineSlices - 1
		if span > 0 {
			k = min(int(x.at*timelineSlices/span), timelineSlices-1)
		}
		out[k] = max(out[k], x.mib)
	}
	return out
}

// readRSS reads the VmRSS line of /proc/PID/status, in MiB.
func readRSS(pid int) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseRSS(bufio.NewScanner(f))
}

// parseRSS finds "VmRSS:   12345 kB" among the lines of a /proc status file.
func parseRSS(sc *bufio.Scanner) (float64, error) {
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, unit, _ := strings.Cut(strings.TrimSpace(rest), " ")
		n, err := strconv.ParseFloat(kb, 64)
		if err != nil || unit != "kB" {
			return 0, fmt.Errorf("VmRSS line %q", sc.Text())
		}
		return n / 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no VmRSS line")
}
