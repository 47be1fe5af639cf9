// Package athenaduck reads a crawl's records as the stack's Athena table declares them, with
// DuckDB (the npm package, pinned in package.json here), for the tests: Athena cannot run on
// these machines, and DuckDB can read JSON lines with declared column types and Hive partitions.
// The view it builds takes the columns and their Hive types from infra/crawlstack/record-columns.json
// (the file the stack builds its Glue table from), matches them to the records' keys without
// regard to case, as the OpenX JSON SerDe does, and reads the partition keys crawl and dt from the
// path, as partition projection does. `make duckdb-deps` installs DuckDB into .cache/duckdb, and
// `make test` does so first. A test that calls Query fails, never skips, when node or DuckDB is
// missing.
package athenaduck

import (
	_ "embed"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/nodetest"
)

//go:embed query.cjs
var script []byte

// duck is DuckDB's Node package, installed by make duckdb-deps into .cache/duckdb.
var duck = nodetest.Reader{Package: "@duckdb/node-api", Cache: "duckdb", Make: "duckdb-deps",
	DirVar: "CRAWL_DUCKDB_DIR", ScriptVar: "DUCKDB_DIR"}

// Query runs queries, in DuckDB's SQL, over the view "records" of the records under root (the
// folder that holds records/: the embedded backend's blobs folder, or a copy of a bucket), and
// returns each query's rows, each row's values as JSON reads them (numbers too big for a float
// are strings).
func Query(t testing.TB, root string, queries ...string) [][]map[string]any {
	t.Helper()
	repo, err := nodetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	q, err := json.Marshal(queries)
	if err != nil {
		t.Fatal(err)
	}
	columns := filepath.Join(repo, "infra", "crawlstack", "record-columns.json")
	out, stderr, err := duck.Run(t, script, columns, root, string(q))
	if err != nil {
		t.Fatalf("DuckDB could not read the records under %s as the table declares them: %v\n%s", root, err, stderr)
	}
	var res struct {
		Results [][]map[string]any `json:"results"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("DuckDB's output: %v\n%s", err, out)
	}
	return res.Results
}
