package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
)

// cmdHelp is what `crawl CMD --help` prints besides the flags.
type cmdHelp struct {
	usage, about, examples string
}

// helpRequest is parseFlags' answer to -h or --help: the help text, for stdout.
type helpRequest struct{ text string }

func (h *helpRequest) Error() string { return "help requested" }

// badFlag is a flag the command does not know or could not take, said in the --flag form the
// docs use, with a suggestion when a defined flag is close.
type badFlag struct{ msg string }

func (b *badFlag) Error() string { return b.msg }

// parseFlags parses args with fs, whose flags the caller has defined. Flags may come before or
// after the arguments (crawl run seeds.txt --max-pages 10), and "--" ends the flags. -h and --help
// return a *helpRequest with the command's usage, what it does, its examples and its flags; a
// flag error returns a *badFlag that says what is wrong in one sentence. The flag package prints
// nothing.
func parseFlags(fs *flag.FlagSet, args []string, h cmdHelp) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(flagsFirst(fs, args))
	switch {
	case err == nil:
		if err := applyEnv(fs, environ); err != nil {
			return &badFlag{msg: err.Error()}
		}
		return nil
	case errors.Is(err, flag.ErrHelp):
		return &helpRequest{text: h.render(fs)}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown flag --" + name
		if s := closest(name, flagNames(fs)); s != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", s)
		}
		return &badFlag{msg: msg}
	}
	msg = strings.ReplaceAll(msg, "flag -", "flag --")
	msg = strings.ReplaceAll(msg, "argument: -", "argument: --")
	return &badFlag{msg: msg}
}

// flagsFirst reorders args so that the flag package, which stops at the first argument that is
// not a flag, sees every flag: the flags (with their values) in their order, then "--", then the
// arguments in theirs. A flag's value is the next argument unless the flag is boolean or written
// --flag=value; everything after "--" is an argument, and so is "-" alone (standard input, by
// custom). An unknown flag stays a flag, for the flag package to report.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i+1:]...)
			i = len(args)
			continue
		case len(a) < 2 || a[0] != '-':
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := fs.Lookup(name)
		if hasValue || f == nil || isBool(f) || i+1 == len(args) {
			continue
		}
		i++
		flags = append(flags, args[i])
	}
	return append(append(flags, "--"), rest...)
}

// isBool is whether f is a boolean flag (--json), which takes no separate value.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// render is the whole help of a command.
func (h cmdHelp) render(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n", h.usage)
	if h.about != "" {
		fmt.Fprintf(&b, "\n%s\n", h.about)
	}
	if h.examples != "" {
		b.WriteString("\nexamples:\n")
		for _, l := range strings.Split(h.examples, "\n") {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	if fs != nil {
		b.WriteString("\nflags:\n")
		fs.VisitAll(func(f *flag.Flag) {
			name, def := flagSyntax(f), defaultOf(f)
			var notes []string
			if def != "none" && def != "off" {
				notes = append(notes, "default "+def)
			}
			if env := envOf(f.Name); env != "" {
				notes = append(notes, "env "+env)
			}
			fmt.Fprintf(&b, "  %s\n      %s", name, f.Usage)
			if len(notes) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
			}
			b.WriteString("\n")
		})
	}
	return b.String()
}

// argNames are the placeholders of the flags' values in help and in docs/cli.md.
var argNames = map[string]string{
	"state": "DIR", "backend": "embedded|aws", "scope": "host|domain|any", "user-agent": "UA", "allow-net": "CIDR",
	"include": "RE", "exclude": "RE", "tls-fingerprint": "chrome", "prices": "k=v,...", "name": "NAME",
	"host-rps": "R", "budget-usd": "X", "class": "a,b", "proxy": "URL", "proxy-rotation": "request|host",
	"host": "H", "prefix": "URL", "pattern": "RE", "url": "URL", "reason": "TEXT", "crawl": "CRAWL",
}

// flagSyntax is how a flag is written: "--state DIR", "--json".
func flagSyntax(f *flag.Flag) string {
	if isBool(f) {
		return "--" + f.Name
	}
	arg := argNames[f.Name]
	if arg == "" {
		arg = "N"
		if g, ok := f.Value.(flag.Getter); ok {
			switch g.Get().(type) {
			case string:
				arg = "S"
			case float64:
				arg = "X"
			case time.Duration:
				arg = "D"
			}
		}
	}
	return "--" + f.Name + " " + arg
}

// defaultOf is a flag's default as the docs show it.
func defaultOf(f *flag.Flag) string {
	switch f.DefValue {
	case "", "[]":
		return "none"
	case "false":
		return "off"
	}
	return f.DefValue
}

// flagNames are the names of fs's flags.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// closest is the name among names that word is most likely a typo of, or "" when none is close:
// at most two edits away, or the only name that starts with word.
func closest(word string, names []string) string {
	best, bestD := "", 3
	sort.Strings(names)
	for _, n := range names {
		if d := levenshtein.ComputeDistance(word, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return best
	}
	var prefixed []string
	for _, n := range names {
		if strings.HasPrefix(n, word) {
			prefixed = append(prefixed, n)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// usageError prints a help request on stdout (exit 0), and any other error of the command's
// arguments on stderr, with where to find its help (exit 2).
func usageError(stdout, stderr io.Writer, cmd string, err error) int {
	var h *helpRequest
	if errors.As(err, &h) {
		fmt.Fprint(stdout, h.text)
		return ExitOK
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "crawl %s: %s\n", cmd, line)
	}
	fmt.Fprintf(stderr, "Run 'crawl %s --help' for its flags and examples.\n", cmd)
	return ExitUsage
}

// quotedArgs lists args after a colon, for an error about them: ": \"a\" \"b\"".
func quotedArgs(args []string) string {
	if len(args) == 0 {
		return ""
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return ": " + strings.Join(q, " ")
}

// commit is the commit the binary was built from, when the build set it (make crawl does) and the
// toolchain did not stamp it.
var commit string

// version is what `crawl --version` prints: the module's version and the commit it was built from,
// as the Go toolchain stamped them into the binary.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "crawl: no build information in this binary"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", with uncommitted changes"
			}
		}
	}
	out := fmt.Sprintf("crawl %s %s, %s", bi.Main.Path, v, bi.GoVersion)
	if rev == "" && commit != "" {
		return fmt.Sprintf("%s, commit %s", out, commit)
	}
	if rev == "" {
		return out + ", commit unknown (go run stamps none: build with make crawl or go build)"
	}
	return fmt.Sprintf("%s, commit %s (%s%s)", out, rev, when, modified)
}

// Markers around the generated table of crawl run flags in docs/cli.md.
const (
	tableStart = "<!-- crawl run flags: generated from the flag definitions (TestCLIDocFlagTable); edit them, not this table -->\n"
	tableEnd   = "<!-- end of crawl run flags -->\n"
)

// flagTable is the Markdown table of fs's flags, between its markers.
func flagTable(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(tableStart)
	b.WriteString("| flag | environment | default | meaning |\n|---|---|---|---|\n")
	fs.VisitAll(func(f *flag.Flag) {
		def := defaultOf(f)
		if def != "none" && def != "off" {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s |\n", strings.ReplaceAll(flagSyntax(f), "|", `\|`), envOf(f.Name), def,
			strings.ReplaceAll(f.Usage, "|", `\|`))
	})
	b.WriteString(tableEnd)
	return b.String()
}

// flagTableIn is the generated table in a document, markers included.
func flagTableIn(readme string) (string, error) {
	i := strings.Index(readme, tableStart)
	j := strings.Index(readme, tableEnd)
	if i < 0 || j < i {
		return "", errors.New("the document has no generated flag table (its markers are missing)")
	}
	return readme[i : j+len(tableEnd)], nil
}
