// Package warctest checks WARC files and their CDXJ indexes with an independent reader: warcio.js
// (the npm package warcio, pinned in package.json here), run by node. `make warcio-deps` installs
// it into .cache/warcio, and `make test` does so first. A test that calls Check fails, never skips,
// when node or warcio.js is missing.
package warctest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

//go:embed check.cjs
var script []byte

// Summary is what the reader saw: record counts by WARC-Type among them.
type Summary struct {
	Files      int `json:"files"`
	Records    int `json:"records"`
	Warcinfo   int `json:"warcinfo"`
	Responses  int `json:"response"`
	Requests   int `json:"request"`
	IndexLines int `json:"indexLines"`
	Resolved   int `json:"resolved"` // index lines whose offset and length read back their record
}

// Check reads each WARC file (a .warc.gz with its index beside it, the file's name plus ".cdxj")
// with warcio.js. It fails t with every problem found: a block or payload digest that is not the
// SHA-256 of what the record holds, a file that does not open with its warcinfo record, a request
// record away from its response, or an index line that is out of order, disagrees with warcio's
// own CDXJ indexer or does not read back its record.
func Check(t testing.TB, files ...string) Summary {
	t.Helper()
	if len(files) == 0 {
		t.Fatal("warctest.Check: no WARC files to check")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to read WARC files with warcio.js: %v", err)
	}
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(t.TempDir(), "check.cjs")
	if err := os.WriteFile(js, script, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, append([]string{js}, files...)...)
	cmd.Env = append(os.Environ(), "WARCIO_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var res struct {
		Summary  Summary  `json:"summary"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("warcio.js check: %v (%v)\nstdout: %s\nstderr: %s", runErr, err, out, stderr.String())
	}
	for _, p := range res.Problems {
		t.Errorf("warcio.js: %s", p)
	}
	if runErr != nil && len(res.Problems) == 0 {
		t.Fatalf("warcio.js check: %v\nstderr: %s", runErr, stderr.String())
	}
	return res.Summary
}

// Dir is where warcio.js is installed: $CRAWL_WARCIO_DIR, or .cache/warcio at the repository's
// root.
func Dir() (string, error) {
	dir := os.Getenv("CRAWL_WARCIO_DIR")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, ".cache", "warcio")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "warcio", "package.json")); err != nil {
		return "", errors.New("warcio.js is not installed in " + dir + ": run `make warcio-deps`")
	}
	return dir, nil
}

// RepoRoot is the nearest folder above the working directory whose go.mod is the root module's.
// Other readers the tests install (shared/export/exporttest) lie under its .cache too.
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
