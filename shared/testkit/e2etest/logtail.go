package e2etest

import (
	"bytes"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
)

// The handlers' log in a harness. A test that passes prints none of it; one that fails prints the
// last lines the handlers wrote (logTailLines), so that a failure seen once, under load, says what
// the handlers did before it. CRAWL_TEST_LOG sets the level kept: warn by default, or debug, info
// or error.

// logTailLines is how many of the handlers' last log lines a failed test prints.
const logTailLines = 300

// logTail keeps the last lines written to it.
type logTail struct {
	mu      sync.Mutex
	lines   []string
	next    int
	partial []byte
	dropped int
}

// Write keeps p's complete lines, the oldest dropped past logTailLines.
func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.keep(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

func (l *logTail) keep(line string) {
	if len(l.lines) < logTailLines {
		l.lines = append(l.lines, line)
		return
	}
	l.lines[l.next] = line
	l.next = (l.next + 1) % logTailLines
	l.dropped++
}

// String is the lines kept, oldest first, after a line that counts those dropped.
func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	if l.dropped > 0 {
		b.WriteString("(" + strconv.Itoa(l.dropped) + " earlier lines not kept)\n")
	}
	for i := range l.lines {
		b.WriteString(l.lines[(l.next+i)%len(l.lines)])
		b.WriteByte('\n')
	}
	return b.String()
}

// logLevel is the level CRAWL_TEST_LOG names, warn when it names none.
func logLevel() slog.Level {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(os.Getenv("CRAWL_TEST_LOG"))); err != nil {
		return slog.LevelWarn
	}
	return lv
}

// handlerLog is the logger of the harness's handlers and runner: its lines are kept, and printed
// when the test fails.
func (h *Harness) handlerLog() *slog.Logger {
	h.logOnce.Do(func() {
		h.tail = &logTail{}
		h.T.Cleanup(func() {
			if h.T.Failed() {
				h.T.Logf("the handlers' last log lines (level %s and above; CRAWL_TEST_LOG sets it):\n%s", logLevel(), h.tail)
			}
		})
	})
	return slog.New(slog.NewTextHandler(h.tail, &slog.HandlerOptions{Level: logLevel()}))
}
