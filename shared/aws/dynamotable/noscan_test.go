package dynamotable

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestNothingScansTheTable: a crawl's cost must not depend on what else the table holds, so no
// code of the repository calls DynamoDB's Scan. The table port has no Scan, the adapter's API
// leaves it out, and no Go file but tests names the SDK's Scan input or paginator (a client called
// directly, past the port, would). Tests may: they read the emulator's whole table as an oracle.
// The meter names ScanInput to ask any call for its consumed capacity, and calls none.
func TestNothingScansTheTable(t *testing.T) {
	if _, ok := reflect.TypeFor[API]().MethodByName("Scan"); ok {
		t.Error("the adapter's API has Scan")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	scan := regexp.MustCompile(`\b(ScanInput|NewScanPaginator|ScanPaginator)\b`)
	allowed := map[string]bool{filepath.Join("shared", "observe", "meter", "dynamodb.go"): true}
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "cdk.out") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, p)
		if strings.HasSuffix(p, "_test.go") || allowed[rel] {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if loc := scan.FindIndex(b); loc != nil {
			t.Errorf("%s names %s: no code may scan the table", rel, b[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: not the repository", files, root)
	}
}
