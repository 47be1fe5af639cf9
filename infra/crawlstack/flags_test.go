package crawlstack

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCDKJSONHasTheRecommendedFlags compares the context of cdk.json with the
// feature flags `cdk init` writes for the pinned aws-cdk-lib, read from the
// library bundled in the aws-cdk-go module. After a CDK upgrade it says which
// flags to add.
func TestCDKJSONHasTheRecommendedFlags(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", "github.com/aws/aws-cdk-go/awscdk/v2").Output()
	if err != nil {
		t.Skipf("cannot locate the aws-cdk-go module: %v", err)
	}
	dir, version, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	tgz := filepath.Join(dir, "jsii", "aws-cdk-lib-"+strings.TrimPrefix(version, "v")+".tgz")
	want, err := recommendedFlags(tgz)
	if err != nil {
		t.Fatalf("%s: %v", tgz, err)
	}
	got, err := cdkJSONContext("../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	for flag, v := range want {
		if g, ok := got[flag]; !ok {
			t.Errorf("cdk.json lacks recommended flag %q: %v", flag, v)
		} else if !reflect.DeepEqual(g, v) {
			t.Errorf("cdk.json sets %q to %v, recommended %v", flag, g, v)
		}
	}
}

// recommendedFlags reads package/recommended-feature-flags.json from an
// aws-cdk-lib npm tarball.
func recommendedFlags(tgz string) (map[string]any, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no package/recommended-feature-flags.json")
		}
		if err != nil {
			return nil, err
		}
		if h.Name != "package/recommended-feature-flags.json" {
			continue
		}
		var flags map[string]any
		if err := json.NewDecoder(tr).Decode(&flags); err != nil {
			return nil, err
		}
		return flags, nil
	}
}
