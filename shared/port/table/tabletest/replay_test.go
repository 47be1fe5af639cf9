package tabletest_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/crawlstack/crawlstack/shared/local/sqlite"
	"github.com/crawlstack/crawlstack/shared/port/table"
	"github.com/crawlstack/crawlstack/shared/port/table/tabletest"
)

// TestFaultsBreakThePickedWrites: a replayed write is applied once and answers as its second
// sending does (an ADD applied twice, a conditional put refused by its own item); a failed one is
// not applied; a lost one is applied and fails; writes the rules do not pick go through.
func TestFaultsBreakThePickedWrites(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := tabletest.NewFaults(db.Table("t"),
		tabletest.Rule{Op: "update", Sort: "n", Nth: 2},
		tabletest.Rule{Op: "put", Key: k("p")},
		tabletest.Rule{Op: "delete", Sort: "d", Fail: true},
		tabletest.Rule{Op: "update", Key: k("lost"), Lost: true})
	add := table.Update{Add: map[string]int64{"c": 1}}
	for range 3 {
		if _, err := f.Update(ctx, k("n"), add, table.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if it, _ := f.Get(ctx, k("n")); it.Int("c") != 4 {
		t.Errorf("3 ADDs, the second replayed, count %d, want 4", it.Int("c"))
	}
	err = f.Put(ctx, k("p"), table.Item{"a": "x"}, table.ItemNotExists())
	if cf, ok := table.IsConditionFailed(err); !ok || cf.Item.String("a") != "x" {
		t.Errorf("a replayed put-if-absent = %v, want refused by its own item", err)
	}
	if err := f.Put(ctx, k("d"), table.Item{"a": "x"}, table.Cond{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Delete(ctx, k("d"), table.Cond{}); !errors.Is(err, tabletest.ErrInjected) {
		t.Errorf("a failed delete = %v, want ErrInjected", err)
	}
	if _, err := f.Get(ctx, k("d")); err != nil {
		t.Errorf("the item of a failed delete: %v, want it there", err)
	}
	if _, err := f.Update(ctx, k("lost"), add, table.Cond{}); !errors.Is(err, tabletest.ErrInjected) {
		t.Errorf("a lost update = %v, want ErrInjected", err)
	}
	if it, _ := f.Get(ctx, k("lost")); it.Int("c") != 1 {
		t.Errorf("a lost update counted %d, want it applied once", it.Int("c"))
	}
	want := []string{"replay update P|n", "replay put P|p", "fail delete P|d", "lose update P|lost"}
	if got := f.Injected(); !reflect.DeepEqual(got, want) {
		t.Errorf("Injected = %q, want %q", got, want)
	}
}

// k is the key s in partition P.
func k(s string) table.Key { return table.Key{Part: "P", Sort: s} }
