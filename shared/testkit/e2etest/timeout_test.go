package e2etest

import (
	"testing"
	"time"
)

// deadlineT is a test with a deadline.
type deadlineT struct {
	testing.TB
	at time.Time
}

func (d deadlineT) Deadline() (time.Time, bool) { return d.at, !d.at.IsZero() }

// A run ends before the test binary's deadline, on the harness's own assertion: its timeout is
// cut to leave deadlineMargin.
func TestARunEndsBeforeTheTestsDeadline(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		left    time.Duration // to the test's deadline (0: none)
		atMost  time.Duration
		atLeast time.Duration
	}{
		{"no deadline", 4 * time.Minute, 0, 4 * time.Minute, 4 * time.Minute},
		{"a far deadline", 4 * time.Minute, time.Hour, 4 * time.Minute, 4 * time.Minute},
		{"a near deadline", 4 * time.Minute, 2 * time.Minute, 2*time.Minute - deadlineMargin, time.Minute},
		{"the default, near a deadline", 0, 90 * time.Second, 90*time.Second - deadlineMargin, 50 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deadlineT{TB: t}
			if tt.left > 0 {
				d.at = time.Now().Add(tt.left)
			}
			got := (&Harness{T: d, Timeout: tt.timeout}).runTimeout()
			if got > tt.atMost || got < tt.atLeast {
				t.Errorf("run timeout %v, want %v to %v", got, tt.atLeast, tt.atMost)
			}
		})
	}
}
