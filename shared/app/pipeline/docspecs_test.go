package pipeline

import (
	"os"
	"regexp"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
)

// The crawl specs the README and docs/spec.md show fit a deployed stack's defaults (its bounds:
// DefaultConfig with the stack's own StackMaxPages), so that a user who copies one is not refused.
func TestTheDocumentedSpecsFitTheStacksDefaults(t *testing.T) {
	stack := DefaultConfig()
	stack.MaxPages = StackMaxPages
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	found := 0
	for _, doc := range []string{"../../../README.md", "../../../docs/spec.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(b, -1) {
			if !crawlspec.IsSpec("spec.yaml", m[1]) || !regexp.MustCompile(`(?m)^seeds:`).Match(m[1]) {
				continue // not a whole spec: a part of one, shown alone
			}
			found++
			if _, err := crawlspec.Parse(m[1], stack.SpecBounds()); err != nil {
				t.Errorf("%s: a documented spec is refused by a default stack:\n%s\n%v", doc, m[1], err)
			}
		}
	}
	if found == 0 {
		t.Error("no YAML spec found in the README or docs/spec.md")
	}
}
