// Package exporttest reads the files `crawl export` writes with readers the project does not
// write: csv-parse (the npm package, pinned in package.json here) for CSV and Node's JSON.parse
// for JSON lines, run by node. `make csvparse-deps` installs csv-parse into .cache/csvparse, and
// `make test` does so first. A test that calls Read fails, never skips, when node or csv-parse is
// missing.
package exporttest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crawlstack/crawlstack/shared/warcfile/warctest"
)

//go:embed read.cjs
var script []byte

// Read parses the file at path as format ("csv" or "jsonl") and returns its rows: for CSV, each
// row's cells by the header's names; for JSON lines, each line's object as JSON.parse reads it
// (numbers are float64).
func Read(t testing.TB, format, path string) []map[string]any {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to read the exported file with csv-parse: %v", err)
	}
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(t.TempDir(), "read.cjs")
	if err := os.WriteFile(js, script, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, js, format, path)
	cmd.Env = append(os.Environ(), "CSVPARSE_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the independent reader refused %s as %s: %v\n%s", path, format, err, stderr.String())
	}
	var res struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the reader's output: %v\n%s", err, out)
	}
	return res.Rows
}

// Dir is where csv-parse is installed: $CRAWL_CSVPARSE_DIR, or .cache/csvparse at the
// repository's root.
func Dir() (string, error) {
	dir := os.Getenv("CRAWL_CSVPARSE_DIR")
	if dir == "" {
		root, err := warctest.RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, ".cache", "csvparse")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "csv-parse", "package.json")); err != nil {
		return "", errors.New("csv-parse is not installed in " + dir + ": run `make csvparse-deps`")
	}
	return dir, nil
}
