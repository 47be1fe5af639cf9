package tabletest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testUpdateNamesEachAttributeOnce: an update that names an attribute twice is refused with
// table.ErrOverlap, as DynamoDB refuses it ("Two document paths overlap"), and changes nothing:
// applied, an attribute set and added would count twice.
func testUpdateNamesEachAttributeOnce(t *testing.T, tb table.Table, prefix string) {
	tests := []struct {
		name string
		u    table.Update
	}{
		{"SetAndAdd", table.Update{Set: map[string]any{"n": int64(1)}, Add: map[string]int64{"n": 1}}},
		{"SetAndRemove", table.Update{Set: map[string]any{"a": "x"}, Remove: []string{"a"}}},
		{"AddAndRemove", table.Update{Add: map[string]int64{"n": 1}, Remove: []string{"n"}}},
		{"RemoveTwice", table.Update{Remove: []string{"a", "a"}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := table.Key{Part: prefix, Sort: fmt.Sprintf("overlap-%d", i)}
			old := table.Item{"a": "old", "n": int64(5)}
			put(t, tb, key, old)
			_, err := tb.Update(ctxFor(t), key, tt.u, table.Cond{})
			if !errors.Is(err, table.ErrOverlap) {
				t.Errorf("Update = %v, want an error wrapping table.ErrOverlap", err)
			}
			if _, cf := table.IsConditionFailed(err); cf {
				t.Errorf("Update = %v, a condition failure; want a refused update", err)
			}
			wantItem(t, "item after the refused update", get(t, tb, key), old)
		})
	}
}
