package e2etest

import (
	"fmt"
	"strings"
	"testing"
)

func TestLogTailKeepsTheLastLinesInOrder(t *testing.T) {
	l := &logTail{}
	for i := range logTailLines + 5 {
		// Each line in two writes, as a handler may split one.
		fmt.Fprintf(l, "line %d", i)
		fmt.Fprint(l, "\n")
	}
	fmt.Fprint(l, "partial") // no newline yet: not a line
	got := strings.Split(strings.TrimSuffix(l.String(), "\n"), "\n")
	if got[0] != "(5 earlier lines not kept)" {
		t.Errorf("first line %q, want the count of the lines dropped", got[0])
	}
	lines := got[1:]
	if len(lines) != logTailLines {
		t.Fatalf("%d lines kept, want %d", len(lines), logTailLines)
	}
	for i, line := range lines {
		if want := fmt.Sprintf("line %d", i+5); line != want {
			t.Fatalf("line %d is %q, want %q", i, line, want)
		}
	}
}
