package errclass

import (
	"errors"
	"fmt"
	"testing"
)

func TestOf(t *testing.T) {
	base := errors.New("boom")
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, ""},
		{"unclassified", base, Internal},
		{"classified", New(Timeout, base), Timeout},
		{"wrapped", fmt.Errorf("fetch: %w", New(DNS, base)), DNS},
		{"outermost wins", New(Robots, New(Timeout, base)), Robots},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.err); got != tt.want {
				t.Errorf("Of(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestFromStatusAndRetryable(t *testing.T) {
	tests := []struct {
		code  int
		want  Class
		retry bool
	}{
		{200, "", false}, {301, "", false}, {404, HTTP4xx, false}, {410, HTTP4xx, false},
		{408, HTTP429, true}, {429, HTTP429, true}, {500, HTTP5xx, true}, {503, HTTP5xx, true},
	}
	for _, tt := range tests {
		got := FromStatus(tt.code)
		if got != tt.want {
			t.Errorf("FromStatus(%d) = %q, want %q", tt.code, got, tt.want)
		}
		if got != "" && Retryable(got) != tt.retry {
			t.Errorf("Retryable(%q) = %v, want %v", got, !tt.retry, tt.retry)
		}
	}
}
