package cli

import (
	"strings"
)

// defaultState is the state directory when --state is not given.
const defaultState = "crawl-state"

// hints writes the commands the CLI suggests so that they can be pasted as they are: with the
// backend and the state directory of the command that suggests them.
type hints struct {
	backend, state, stack string
}

func hintsOf(o RunOptions) hints { return hints{backend: o.Backend, state: o.State, stack: o.Stack} }

// cmd is the command `crawl SUB [--backend aws | --state DIR] ARGS...`.
func (h hints) cmd(sub string, args ...string) string {
	parts := []string{"crawl", sub}
	switch {
	case h.stack != "":
		parts = append(parts, "--stack", shellQuote(h.stack))
	case h.backend == "aws":
		parts = append(parts, "--backend", "aws")
	case h.state != "" && h.state != defaultState:
		parts = append(parts, "--state", shellQuote(h.state))
	}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but the characters that need none.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
