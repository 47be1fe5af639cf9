// Package nodetest runs the tests' independent readers: Node scripts over npm packages that the
// Makefile installs under .cache (warcio.js for WARC files, csv-parse for CSV exports). A test
// that runs one fails, never skips, when node or the package is missing.
package nodetest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Reader is an npm package installed for the tests.
type Reader struct {
	Package string // the npm package, whose package.json shows it is installed
	Cache   string // its folder under the repository's .cache
	Make    string // the make target that installs it
	// DirVar is the variable that overrides the folder (CRAWL_WARCIO_DIR); ScriptVar the one that
	// tells the script where it is (WARCIO_DIR).
	DirVar, ScriptVar string
}

// Dir is where r is installed: $DirVar, or .cache/Cache at the repository's root.
func (r Reader) Dir() (string, error) {
	dir := os.Getenv(r.DirVar)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, ".cache", r.Cache)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", r.Package, "package.json")); err != nil {
		return "", errors.New(r.Package + " is not installed in " + dir + ": run `make " + r.Make + "`")
	}
	return dir, nil
}

// Run runs script (a CommonJS file's text) under node with args, r's folder in $ScriptVar, and
// returns its stdout, its stderr and how it ended. It fails t when node or r is missing.
func (r Reader) Run(t testing.TB, script []byte, args ...string) (stdout []byte, stderr string, err error) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to read the files with %s: %v", r.Package, err)
	}
	dir, err := r.Dir()
	if err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(t.TempDir(), "reader.cjs")
	if err := os.WriteFile(js, script, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, append([]string{js}, args...)...)
	cmd.Env = append(os.Environ(), r.ScriptVar+"="+dir)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	return out, errOut.String(), err
}

// RepoRoot is the nearest folder above the working directory whose go.mod is the root module's.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(mod), "module github.com/crawlstack/crawlstack\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no repository root (the go.mod of github.com/crawlstack/crawlstack) above the working directory")
		}
		dir = parent
	}
}
