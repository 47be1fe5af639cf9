package lambdarie

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// ColdStarts starts a fresh process of o runs times, invokes it once with payload (the answer does
// not matter: the bootstrap's init runs before it) and returns each init duration the emulator
// reported.
func ColdStarts(ctx context.Context, o Options, payload []byte, runs int) ([]time.Duration, error) {
	var out []time.Duration
	for i := range runs {
		d, err := coldStart(ctx, o, payload)
		if err != nil {
			return out, fmt.Errorf("cold start %d of %s: %w", i+1, o.Bootstrap, err)
		}
		out = append(out, d)
	}
	return out, nil
}

func coldStart(ctx context.Context, o Options, payload []byte) (time.Duration, error) {
	p, err := Start(ctx, o)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	if _, err := p.Invoke(ctx, payload); err != nil {
		if _, ok := err.(*FunctionError); !ok {
			return 0, err
		}
	}
	d, ok := p.InitDuration()
	if !ok {
		return 0, fmt.Errorf("%w:\n%s", ErrNoInit, p.Output())
	}
	return d, nil
}

// Median is the middle of ds (the mean of the two middle ones for an even count); 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
