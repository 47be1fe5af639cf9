package memlimit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestSetTakesTheLimitFromTheFunctionsMemory(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		wantLimit int64 // the runtime's limit after Set (math.MaxInt64: none)
		wantErr   bool
	}{
		{"lambda of 512 MB", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512"}, 512 << 20 * 85 / 100, false},
		{"lambda of 256 MB", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256"}, 256 << 20 * 85 / 100, false},
		{"the user's GOMEMLIMIT stands", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512", "GOMEMLIMIT": "300MiB"},
			math.MaxInt64, false},
		{"not on Lambda", map[string]string{}, math.MaxInt64, false},
		{"a bad memory size", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "lots"}, math.MaxInt64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			was := debug.SetMemoryLimit(math.MaxInt64)
			defer debug.SetMemoryLimit(was)
			set, err := Set(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tt.wantErr)
			}
			got := debug.SetMemoryLimit(-1) // reads the limit
			if got != tt.wantLimit {
				t.Errorf("limit = %d, want %d", got, tt.wantLimit)
			}
			if tt.wantLimit != math.MaxInt64 && set != got {
				t.Errorf("Set returned %d, the runtime has %d", set, got)
			}
		})
	}
}

// Every Lambda function's main sets the limit, first.
func TestEveryFunctionSetsTheLimitFirst(t *testing.T) {
	mains, err := filepath.Glob("../../../functions/*/main.go")
	if err != nil || len(mains) < 3 {
		t.Fatalf("found the mains %v (err %v), want schedule's, fetch's and parse's", mains, err)
	}
	for _, path := range mains {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if first := firstCall(f, "main"); first != "memlimit.Set" {
			t.Errorf("%s: main calls %q first, want memlimit.Set", path, first)
		}
	}
}

// firstCall names the first call made in the function fn of f, as pkg.Name.
func firstCall(f *ast.File, fn string) string {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn {
			continue
		}
		var name string
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if name != "" {
				return false
			}
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok {
						name = x.Name + "." + sel.Sel.Name
					}
				}
			}
			return true
		})
		return name
	}
	return ""
}
