package importrule_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/importrule"
	"github.com/crawlstack/crawlstack/shared/testkit/nodetest"
)

// list runs `go list -json` over the whole module, with overlay (a `go list -overlay` file) when
// it is not "", and returns its packages.
func list(t *testing.T, overlay string) []importrule.Package {
	t.Helper()
	root, err := nodetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"list", "-json=ImportPath,Imports,Deps"}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []importrule.Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p importrule.Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list gave %d packages: the module was not listed", len(pkgs))
	}
	return pkgs
}

func TestTreeKeepsTheImportRule(t *testing.T) {
	pkgs := list(t, "")
	for _, v := range importrule.Check(pkgs) {
		t.Error(v)
	}
	// Every package of shared/ sits in a known group: a new top-level folder is a decision for
	// the rule, not an accident.
	for _, p := range pkgs {
		rest, ok := strings.CutPrefix(p.ImportPath, importrule.Module+"/shared/")
		if !ok {
			continue
		}
		if _, _, known := importrule.Place(p.ImportPath); !known {
			t.Errorf("%s: shared/%s is in no group of the import rule", p.ImportPath, rest)
		}
	}
}

// TestPlantedViolationsFail plants a file that breaks the rule into a real package, through an
// overlay that go list reads instead of the disk, and checks that the rule names it.
func TestPlantedViolationsFail(t *testing.T) {
	root, err := nodetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, pkg, imp, want string
	}{
		{"the domain imports the SDK", "shared/crawl/crawlstate", "github.com/aws/aws-sdk-go-v2/aws", "links github.com/aws/aws-sdk-go-v2/aws"},
		{"the domain links the SDK through an adapter", "shared/crawl/frontier", importrule.Module + "/shared/aws/dynamotable", "imports aws/dynamotable"},
		{"the domain links the OTel SDK", "shared/port/queue", "go.opentelemetry.io/otel/sdk/metric", "links go.opentelemetry.io/otel/sdk"},
		{"ops imports a handler", "shared/ops/purge", importrule.Module + "/shared/handler/fetcher", "imports handler/fetcher"},
		{"a handler imports another", "shared/handler/parser", importrule.Module + "/shared/handler/scheduler", "handlers never import each other"},
		{"an adapter imports another", "shared/aws/s3blob", importrule.Module + "/shared/aws/sqsqueue", "adapters never import each other"},
		{"production code imports a test kit", "shared/app/pipeline", importrule.Module + "/shared/testkit/embedtest", "only tests import the test kits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			planted := filepath.Join(dir, "planted.go")
			pkgName := filepath.Base(tt.pkg)
			src := "package " + pkgName + "\n\nimport _ \"" + tt.imp + "\"\n"
			if err := os.WriteFile(planted, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			overlay, err := json.Marshal(map[string]map[string]string{"Replace": {
				filepath.Join(root, tt.pkg, "zz_planted.go"): planted,
			}})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "overlay.json")
			if err := os.WriteFile(file, overlay, 0o644); err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, v := range importrule.Check(list(t, file)) {
				if v.Package == importrule.Module+"/"+tt.pkg && strings.Contains(v.Rule, tt.want) {
					found = append(found, v.String())
				}
			}
			if len(found) == 0 {
				t.Errorf("planting an import of %s in %s broke no rule; want one that says %q", tt.imp, tt.pkg, tt.want)
			}
		})
	}
}

func TestCheckNamesEachRule(t *testing.T) {
	const m = importrule.Module + "/"
	tests := []struct {
		name string
		pkg  importrule.Package
		want string // "" for none
	}{
		{"domain to port", importrule.Package{ImportPath: m + "shared/crawl/frontier", Imports: []string{m + "shared/port/table"}}, ""},
		{"domain to the metrics leaf", importrule.Package{ImportPath: m + "shared/crawl/crawlstate", Imports: []string{m + "shared/observe/metrics"}}, ""},
		{"domain to telemetry", importrule.Package{ImportPath: m + "shared/crawl/crawlstate", Imports: []string{m + "shared/observe/telemetry"}}, "crawl/ may import only"},
		{"domain links lambda", importrule.Package{ImportPath: m + "shared/crawl/finish", Deps: []string{"github.com/aws/aws-lambda-go/events"}}, "links github.com/aws/aws-lambda-go/events"},
		{"domain links the OTel API", importrule.Package{ImportPath: m + "shared/crawl/finish", Deps: []string{"go.opentelemetry.io/otel/metric"}}, ""},
		{"handler to glue", importrule.Package{ImportPath: m + "shared/handler/fetcher", Imports: []string{m + "shared/handler/sqsbatch"}}, ""},
		{"handler to handler", importrule.Package{ImportPath: m + "shared/handler/fetcher", Imports: []string{m + "shared/handler/parser"}}, "handlers never import each other"},
		{"shared to functions", importrule.Package{ImportPath: m + "shared/app/cli", Imports: []string{m + "functions/fetch"}}, "nothing under shared/ imports functions/"},
		{"suite to its port", importrule.Package{ImportPath: m + "shared/port/table/tabletest", Imports: []string{m + "shared/port/table"}}, ""},
		{"bench to testkit", importrule.Package{ImportPath: m + "shared/bench/coldstart", Imports: []string{m + "shared/testkit/stackrun"}}, ""},
		{"ops to app", importrule.Package{ImportPath: m + "shared/ops/purge", Imports: []string{m + "shared/app/cli"}}, "ops/ may import only"},
		{"outside the module", importrule.Package{ImportPath: "example.com/x", Imports: []string{m + "shared/app/cli"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := importrule.Check([]importrule.Package{tt.pkg})
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("Check = %v, want no violation", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0].Rule, tt.want)):
				t.Errorf("Check = %v, want one violation that says %q", got, tt.want)
			}
		})
	}
}
