package main

import "sort"

// median returns the median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianSample is the per-field median of samples of one crawler at one size.
func medianSample(samples []sample) sample {
	pick := func(f func(sample) float64) float64 {
		xs := make([]float64, len(samples))
		for i, s := range samples {
			xs[i] = f(s)
		}
		return median(xs)
	}
	m := sample{Crawler: samples[0].Crawler}
	m.Pages = int(pick(func(s sample) float64 { return float64(s.Pages) }))
	m.Seconds = pick(func(s sample) float64 { return s.Seconds })
	m.CPU = pick(func(s sample) float64 { return s.CPU })
	m.MaxRSSMiB = pick(func(s sample) float64 { return s.MaxRSSMiB })
	m.Repeats = int(pick(func(s sample) float64 { return float64(s.Repeats) }))
	m.Conns = int(pick(func(s sample) float64 { return float64(s.Conns) }))
	m.Busy = pick(func(s sample) float64 { return s.Busy })
	m.IOWait = pick(func(s sample) float64 { return s.IOWait })
	m.Timeline.InFlight = pick(func(s sample) float64 { return s.Timeline.InFlight })
	m.Timeline.First = pick(func(s sample) float64 { return s.Timeline.First })
	m.Timeline.Tail = pick(func(s sample) float64 { return s.Timeline.Tail })
	m.Timeline.Full = pick(func(s sample) float64 { return s.Timeline.Full })
	return m
}
