// Package exporttest reads the files `crawl export` writes with readers the project does not
// write: csv-parse (the npm package, pinned in package.json here) for CSV and Node's JSON.parse
// for JSON lines, run by node. `make csvparse-deps` installs csv-parse into .cache/csvparse, and
// `make test` does so first. A test that calls Read fails, never skips, when node or csv-parse is
// missing.
package exporttest

import (
	_ "embed"
	"encoding/json"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/nodetest"
)

//go:embed read.cjs
var script []byte

// csvParse is csv-parse, installed by make csvparse-deps into .cache/csvparse.
var csvParse = nodetest.Reader{Package: "csv-parse", Cache: "csvparse", Make: "csvparse-deps",
	DirVar: "CRAWL_CSVPARSE_DIR", ScriptVar: "CSVPARSE_DIR"}

// Read parses the file at path as format ("csv" or "jsonl") and returns its rows: for CSV, each
// row's cells by the header's names; for JSON lines, each line's object as JSON.parse reads it
// (numbers are float64).
func Read(t testing.TB, format, path string) []map[string]any {
	t.Helper()
	out, stderr, err := csvParse.Run(t, script, format, path)
	if err != nil {
		t.Fatalf("the independent reader refused %s as %s: %v\n%s", path, format, err, stderr)
	}
	var res struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the reader's output: %v\n%s", err, out)
	}
	return res.Rows
}
