package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// A Scan in row order reads the file in several ranges of rows at once: every key once whatever the
// number of ranges (rows deleted, so that the rowids have gaps, and ranges of one row or none of
// the prefix's), and an error of the callback ends the scan at once and is what it returns.
func TestScanInRangesOfRowsReadsEachKeyOnce(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tb := db.Table("t")
	ctx := context.Background()
	const n = 1700
	for i := range n {
		if err := tb.Put(ctx, fmt.Sprintf("k#%05d", i), table.Item{"v": int64(i)}, table.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for i := range n {
		if i%7 == 3 || i >= 600 && i < 1200 {
			if err := tb.Delete(ctx, fmt.Sprintf("k#%05d", i), table.Cond{}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want = append(want, fmt.Sprintf("k#%05d", i))
	}
	was := scanParts
	t.Cleanup(func() { scanParts = was })
	for _, parts := range []int{1, 2, 3, 7, n * 2} {
		scanParts = parts
		var got []string
		if err := tb.Scan(ctx, "k#", func(key string, _ table.Item) error { got = append(got, key); return nil }); err != nil {
			t.Fatalf("%d parts: %v", parts, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%d parts: read %d keys, want the %d left once each", parts, len(got), len(want))
		}
		stop := errors.New("enough")
		calls := 0
		err := tb.Scan(ctx, "k#", func(string, table.Item) error {
			if calls++; calls == 600 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || calls != 600 {
			t.Errorf("%d parts: a callback that failed on its 600th item: Scan returned %v after %d calls", parts, err, calls)
		}
	}
}
