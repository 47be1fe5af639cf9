package crawlstack

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckBootstraps(t *testing.T) {
	tests := []struct {
		name    string
		files   []string // bootstraps to create, by function
		dirs    []string // bootstrap paths made directories instead
		wantErr []string
	}{
		{name: "all present", files: []string{FnSchedule, FnFetch, FnFetchSlow, FnParse}},
		{name: "one missing", files: []string{FnSchedule, FnFetchSlow, FnParse}, wantErr: []string{"function fetch", "make build"}},
		{name: "none", wantErr: []string{"function schedule", "function fetch", "function parse"}},
		{name: "a directory", files: []string{FnSchedule, FnFetch}, dirs: []string{FnParse}, wantErr: []string{"function parse", "not a file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dist := t.TempDir()
			for _, fn := range tt.files {
				if err := os.MkdirAll(filepath.Join(dist, fn), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dist, fn, "bootstrap"), []byte("x"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, fn := range tt.dirs {
				if err := os.MkdirAll(filepath.Join(dist, fn, "bootstrap"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cfg := DefaultConfig()
			cfg.DistDir = dist
			err := cfg.CheckBootstraps()
			wantErrors(t, err, tt.wantErr)
		})
	}
}
