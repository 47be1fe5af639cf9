package lambdarie

import (
	"testing"
	"time"
)

func TestInitDuration(t *testing.T) {
	p := &Process{out: &syncBuffer{}}
	if _, ok := p.InitDuration(); ok {
		t.Error("an init duration before any INIT REPORT")
	}
	// The emulator's lines as it writes them; the REPORT line's own "Init Duration" is not the init.
	p.out.Write([]byte("01 Dec 2026 12:43:36,408 [INFO] (rapid) INIT RTDONE(status: success)\n" +
		"01 Dec 2026 12:43:36,408 [INFO] (rapid) INIT REPORT(durationMs: 22.598000)\n" +
		"REPORT RequestId: 79\tInit Duration: 0.32 ms\tDuration: 24.94 ms\n"))
	d, ok := p.InitDuration()
	if want := 22598 * time.Microsecond; !ok || d != want {
		t.Errorf("InitDuration = %v, %v; want %v", d, ok, want)
	}
}

func TestMedian(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{ms(30, 10, 20, 50, 40), 30 * time.Millisecond},
		{ms(40, 10), 25 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := Median(tt.in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
