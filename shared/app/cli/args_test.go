package cli

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFlagsAfterTheSeedFile runs the built command with its flags after the seed file, as users
// of most CLIs write them: each flag must take effect (the state directory it names holds the
// crawl, --max-pages bounds what the site serves, --json makes stdout one document). After "--",
// what looks like a flag is an argument.
func TestFlagsAfterTheSeedFile(t *testing.T) {
	site, seeds := demoSeeds(t, 20, 4, 500)
	dir := t.TempDir()
	code, stdout, stderr := runBin(t, dir, nil, "run", seeds, "--state", "after", "--allow-net=127.0.0.0/8", "--host-rps", "0",
		"--max-pages", "5", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d, want 0\n%s", code, stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("--json after the seed file: stdout is not one JSON document: %v\n%s", err, stdout)
	}
	if n := site.Fetched(); n < 1 || n > 5 {
		t.Errorf("the site served %d pages, want 1 to 5 (--max-pages 5 after the seed file)", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "after", "state.db")); err != nil {
		t.Errorf("--state after the seed file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "crawl-state")); !os.IsNotExist(err) {
		t.Errorf("the default state directory was used (%v): --state after the seed file was not parsed", err)
	}

	code, _, stderr = runBin(t, dir, nil, "run", "--state", "after", "--", seeds, "--json")
	if code != ExitUsage || !strings.Contains(stderr, `want one SEEDFILE, got 2 arguments: "`+seeds+`" "--json"`) {
		t.Errorf(`after "--", --json must be an argument: exit %d, want %d\n%s`, code, ExitUsage, stderr)
	}
	code, stdout, _ = runBin(t, dir, nil, "status", "--json", "--state", "after")
	if code != ExitOK || !json.Valid([]byte(stdout)) {
		t.Errorf("crawl status with its flags in any order: exit %d\n%s", code, stdout)
	}
}

// TestAdmitConcurrencyOfEachBackend: on the embedded backend schedule admits more URLs at once
// (their SQLite writes share commits); with --backend aws it keeps the functions' default.
func TestAdmitConcurrencyOfEachBackend(t *testing.T) {
	for backend, want := range map[string]int{"embedded": embeddedAdmitConcurrency, "aws": 0} {
		o, err := parseRunFlags("run", []string{"--backend", backend, "seeds.txt"}, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.config(Resources{}).AdmitConcurrency; got != want {
			t.Errorf("--backend %s: AdmitConcurrency %d, want %d", backend, got, want)
		}
	}
}

// TestFlagsFirst checks the reordering that lets flags follow arguments, case by case.
func TestFlagsFirst(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("max-pages", 0, "")
	fs.Bool("json", false, "")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"flags first", []string{"--max-pages", "3", "a"}, []string{"--max-pages", "3", "--", "a"}},
		{"flags after", []string{"a", "--max-pages", "3", "--json"}, []string{"--max-pages", "3", "--json", "--", "a"}},
		{"value with =", []string{"a", "-max-pages=3", "b"}, []string{"-max-pages=3", "--", "a", "b"}},
		{"a boolean takes no value", []string{"--json", "a"}, []string{"--json", "--", "a"}},
		{"-- ends the flags", []string{"a", "--", "--json", "-x"}, []string{"--", "a", "--json", "-x"}},
		{"a value that looks like a flag", []string{"--max-pages", "--json"}, []string{"--max-pages", "--json", "--"}},
		{"- is an argument", []string{"-", "--json"}, []string{"--json", "--", "-"}},
		{"an unknown flag stays a flag", []string{"a", "--turbo", "b"}, []string{"--turbo", "--", "a", "b"}},
		{"a flag missing its value", []string{"a", "--max-pages"}, []string{"--max-pages", "--", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := flagsFirst(fs, tt.args); !slices.Equal(got, tt.want) {
				t.Errorf("flagsFirst(%q) = %q, want %q", tt.args, got, tt.want)
			}
		})
	}
}
