package cli

import (
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/e2etest"

	_ "modernc.org/sqlite" // the raw reader of the state file
)

// TestPurgeEmbedded: crawl purge --url erases a page from the state file and the blob files of
// the embedded backend, keeps the other pages of its WARC file readable, and a later crawl does
// not fetch it (shared/testkit/awse2e runs the same check with --backend aws).
func TestPurgeEmbedded(t *testing.T) {
	state := t.TempDir()
	main := func(args ...string) (int, string, string) { return runMain(t, args...) }
	e2etest.CheckPurge(t, main, []string{"--state", state, "--host-rps", "0"}, []string{"--state", state}, rawEmbedded(state))
}

// TestPurgeLeavesNothingInAnyStoreEmbedded: after a purge of a URL and of a host, no byte of the
// state file, its log or a blob file names them but where docs/erasure.md says they are kept
// (shared/testkit/awse2e runs the same check with --backend aws).
func TestPurgeLeavesNothingInAnyStoreEmbedded(t *testing.T) {
	state := t.TempDir()
	main := func(args ...string) (int, string, string) { return runMain(t, args...) }
	e2etest.CheckPurgeSearchesEveryStore(t, main, []string{"--state", state, "--host-rps", "0"}, []string{"--state", state}, rawEmbedded(state))
}

// rawEmbedded reads the embedded backend's files directly: the state file's rows with SQL, the
// blobs as files.
func rawEmbedded(state string) e2etest.Raw {
	return e2etest.Raw{
		Rows: func(t testing.TB) map[string]string {
			t.Helper()
			db, err := sql.Open("sqlite", filepath.Join(state, "state.db")+"?_pragma=query_only(1)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			out := map[string]string{}
			for _, q := range []string{
				"SELECT replace(pk, char(31), '|'), item FROM items", // keyed as table.Key.String
				"SELECT 'message ' || id, body || ' ' || attrs FROM messages",
			} {
				rows, err := db.Query(q)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				for rows.Next() {
					var k, v string
					if err := rows.Scan(&k, &v); err != nil {
						t.Fatal(err)
					}
					if _, dup := out[k]; dup {
						k += " " + strconv.Itoa(len(out))
					}
					out[k] = v
				}
				if err := rows.Close(); err != nil {
					t.Fatal(err)
				}
			}
			return out
		},
		Files: func(t testing.TB) map[string][]byte {
			t.Helper()
			out := map[string][]byte{}
			for _, name := range []string{"state.db", "state.db-wal"} {
				b, err := os.ReadFile(filepath.Join(state, name))
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
				out[name] = b
			}
			return out
		},
		Objects: func(t testing.TB) map[string][]byte {
			t.Helper()
			root := filepath.Join(state, "blobs")
			out := map[string][]byte{}
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(root, p)
				out[filepath.ToSlash(rel)] = b
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return out
		},
	}
}
