package cli

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpAndTyposAsAUserSeesThem runs the built command the ways a newcomer does: help goes to
// stdout with examples and exit 0; a typo of a command or a flag gets a suggestion; a wrong number
// of arguments says what is wrong without a page of usage.
func TestHelpAndTyposAsAUserSeesThem(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // each must be in stdout
		stderr   []string // each must be in stderr
		noStderr bool
	}{
		{"run help", []string{"run", "--help"}, ExitOK, []string{"usage: crawl run [flags] [SEEDFILE]", "examples:", "--max-receive N", "--visibility D", "--quiet"}, nil, true},
		{"demo help", []string{"demo", "--help"}, ExitOK, []string{"usage: crawl demo", "--pages N", "examples:"}, nil, true},
		{"help run", []string{"help", "run"}, ExitOK, []string{"usage: crawl run [flags] [SEEDFILE]"}, nil, true},
		{"status help", []string{"status", "-h"}, ExitOK, []string{"usage: crawl status", "examples:"}, nil, true},
		{"invoke help", []string{"invoke", "--help"}, ExitOK, []string{"usage: crawl invoke", "events/"}, nil, true},
		{"help", []string{"--help"}, ExitOK, []string{"crawl run [flags] [SEEDFILE]", "examples:"}, nil, true},
		{"command typo", []string{"rnu", "seeds.txt"}, ExitUsage, nil, []string{`unknown command "rnu"; did you mean "run"?`}, false},
		{"flag typo", []string{"run", "--max-page", "5", "seeds.txt"}, ExitUsage, nil, []string{"unknown flag --max-page (did you mean --max-pages?)", "crawl run --help"}, false},
		{"two seed files", []string{"run", "a.txt", "b.txt"}, ExitUsage, nil, []string{`crawl run: want one SEEDFILE, got 2 arguments: "a.txt" "b.txt"`}, false},
		{"bad value", []string{"run", "--concurrency", "many", "seeds.txt"}, ExitUsage, nil, []string{"--concurrency"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runBin(t, "", nil, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tt.code, stderr)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout does not say %q:\n%s", want, stdout)
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			}
			if tt.noStderr && stderr != "" {
				t.Errorf("help wrote to stderr:\n%s", stderr)
			}
			if strings.Contains(stdout+stderr, "Usage of") || strings.Count(stderr, "\n") > 3 {
				t.Errorf("raw flag-package usage, or a page of it on an error:\n%s%s", stdout, stderr)
			}
		})
	}
}

// TestVersionNamesTheCommit checks crawl --version against git, the independent record of the
// commit the binary was built from.
func TestVersionNamesTheCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	for _, arg := range []string{"--version", "version"} {
		code, stdout, stderr := runBin(t, "", nil, arg)
		if code != ExitOK || !strings.Contains(stdout, "github.com/crawlstack/crawlstack") ||
			!strings.Contains(stdout, "commit "+strings.TrimSpace(string(head))) {
			t.Errorf("crawl %s: exit %d, stdout %q, stderr %q; want the module and commit %s", arg, code, stdout, stderr, head)
		}
	}
}

// updateCLIDoc rewrites the generated flag table of docs/cli.md instead of checking it.
var updateCLIDoc = flag.Bool("update-cli-doc", false, "rewrite the crawl run flag table of docs/cli.md from the flag definitions")

// TestCLIDocFlagTable holds the table of crawl run flags in docs/cli.md, the command reference, to
// the flag definitions, the one place each flag is documented:
// `go test ./shared/app/cli -run TestCLIDocFlagTable -update-cli-doc` writes it. The README links
// to that page and keeps no table of its own.
func TestCLIDocFlagTable(t *testing.T) {
	const path = "../../../docs/cli.md"
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := flagTableIn(string(body))
	if err != nil {
		t.Fatal(err)
	}
	want := flagTable(runFlags("run", &RunOptions{}, true))
	if got == want {
		return
	}
	if *updateCLIDoc {
		if err := os.WriteFile(path, []byte(strings.Replace(string(body), got, want, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the flag table of docs/cli.md differs from the flags of crawl run; run\n  go test ./shared/app/cli -run TestCLIDocFlagTable -update-cli-doc\nwant:\n%s\ngot:\n%s", want, got)
}

// TestErrorsSayOneThingAndNameTheFlag runs the built command with bad input: each bad seed line
// is reported in one sentence, without the error repeating itself, a bare host name gets the
// scheme it lacks, only the first 20 bad lines are listed and the rest counted; bad flags are
// named as flags and reported before the seed file is read.
func TestErrorsSayOneThingAndNameTheFlag(t *testing.T) {
	lines := []string{"www.example.com", "http://[::1"}
	for i := range 28 {
		lines = append(lines, fmt.Sprintf("bad line %d", i))
	}
	seeds := writeFile(t, "seeds.txt", strings.Join(lines, "\n")+"\n")
	code, _, stderr := runBin(t, "", nil, "run", "--state", "st", seeds)
	if code != ExitUsage {
		t.Errorf("a seed file with no good line: exit %d, want %d", code, ExitUsage)
	}
	if n := strings.Count(stderr, ": skipped "); n != 20 {
		t.Errorf("%d bad lines listed, want the first 20:\n%s", n, stderr)
	}
	for _, want := range []string{`line 1: skipped "www.example.com": no scheme: write https://www.example.com`,
		`line 2: skipped "http://[::1": missing ']' in host`, "10 more bad lines skipped (30 in all)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	for _, repeated := range []string{"parse: ", "normalize", "scope: "} {
		if strings.Contains(stderr, repeated) {
			t.Errorf("stderr repeats the error's layers (%q):\n%s", repeated, stderr)
		}
	}

	missing := filepath.Join(t.TempDir(), "missing.txt")
	code, _, stderr = runBin(t, "", nil, "run", "--host-rps", "-1", "--tls-fingerprint", "firefox", missing)
	if code != ExitUsage {
		t.Errorf("bad flags: exit %d, want %d", code, ExitUsage)
	}
	for _, want := range []string{"--host-rps -1: must be 0", `--tls-fingerprint "firefox": want chrome`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "seed file") || strings.Contains(stderr, "host rps") {
		t.Errorf("the seed file was read before the flags were checked, or a setting is named instead of its flag:\n%s", stderr)
	}
}
