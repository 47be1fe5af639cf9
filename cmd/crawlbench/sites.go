package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// siteSpec is one generated site of the benchmark: its size, and how long the site waits before
// each response.
type siteSpec struct {
	Pages   int
	Latency time.Duration
}

func (s siteSpec) String() string {
	if s.Latency == 0 {
		return fmt.Sprintf("%d pages, no latency", s.Pages)
	}
	return fmt.Sprintf("%d pages, %v per response", s.Pages, s.Latency)
}

// parseSites parses a comma-separated list of sites, each PAGES or PAGES@LATENCY with a Go
// duration ("10000,5000@50ms").
func parseSites(list string) ([]siteSpec, error) {
	var out []siteSpec
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		pages, latency, hasLatency := strings.Cut(item, "@")
		n, err := strconv.Atoi(pages)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("site %q: the page count must be a whole number of at least 1", item)
		}
		s := siteSpec{Pages: n}
		if hasLatency {
			d, err := time.ParseDuration(latency)
			if latency == "0" {
				d, err = 0, nil
			}
			if err != nil || d < 0 {
				return nil, fmt.Errorf("site %q: the latency must be a duration such as 50ms", item)
			}
			s.Latency = d
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no site in %q", list)
	}
	return out, nil
}
