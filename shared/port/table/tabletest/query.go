package tabletest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// testQuery reads partitions by sort-key prefix: a prefix reads its own items, in sort-key order,
// and none of another partition's, even one whose name starts with this one's.
func testQuery(t *testing.T, tb table.Table, prefix string) {
	part, other := prefix+"p", prefix+"p2"
	items := map[string]table.Item{
		"a/1": {"n": int64(1)}, "a/2": {"n": int64(2)}, "a/3x": {"n": int64(3)}, "a": {"n": int64(0)},
		"b/1": {"n": int64(4)}, "A/1": {"n": int64(5)}, "a%/1": {"n": int64(6)}, "a_/1": {"n": int64(7)},
	}
	for k, it := range items {
		put(t, tb, table.Key{Part: part, Sort: k}, it)
	}
	put(t, tb, table.Key{Part: other, Sort: "a/1"}, table.Item{"n": int64(99)})
	tests := []struct {
		prefix string
		want   []string
	}{
		{"a/", []string{"a/1", "a/2", "a/3x"}},
		{"b/", []string{"b/1"}},
		{"a%", []string{"a%/1"}},
		{"a_", []string{"a_/1"}},
		{"c/", nil},
		{"", []string{"A/1", "a", "a%/1", "a/1", "a/2", "a/3x", "a_/1", "b/1"}},
	}
	for _, tt := range tests {
		t.Run("prefix="+tt.prefix, func(t *testing.T) {
			var got []string
			err := tb.Query(ctxFor(t), part, tt.prefix, func(sort string, it table.Item) error {
				wantItem(t, "queried "+sort, it, items[sort])
				got = append(got, sort)
				return nil
			})
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) { // in sort-key order, not sorted here
				t.Errorf("Query(%q) = %q, want %q", tt.prefix, got, tt.want)
			}
		})
	}
	t.Run("EmptyPartition", func(t *testing.T) {
		err := tb.Query(ctxFor(t), prefix+"none", "", func(sort string, _ table.Item) error {
			t.Errorf("Query of an empty partition returned %q", sort)
			return nil
		})
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
	})
	t.Run("StopsOnError", func(t *testing.T) {
		stop := errors.New("stop")
		calls := 0
		err := tb.Query(ctxFor(t), part, "a/", func(string, table.Item) error {
			calls++
			return stop
		})
		if !errors.Is(err, stop) {
			t.Errorf("Query err = %v, want it to wrap the callback's error", err)
		}
		if calls != 1 {
			t.Errorf("callback called %d times after returning an error, want 1", calls)
		}
	})
	t.Run("SeesTheLastWrite", func(t *testing.T) {
		key := table.Key{Part: part, Sort: "b/1"}
		if _, err := tb.Update(ctxFor(t), key, table.Update{Add: map[string]int64{"n": 10}}, table.Cond{}); err != nil {
			t.Fatal(err)
		}
		if err := tb.Delete(ctxFor(t), table.Key{Part: part, Sort: "a/2"}, table.Cond{}); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		err := tb.Query(ctxFor(t), part, "", func(sort string, it table.Item) error {
			got[sort] = it.Int("n")
			return nil
		})
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		if _, ok := got["a/2"]; ok || got["b/1"] != 14 {
			t.Errorf("Query right after an update and a delete: %v, want b/1 at 14 and no a/2", got)
		}
	})
}

// testQueryPages reads a partition larger than one page of either adapter (DynamoDB's 1 MB, the
// SQLite adapter's 500 items): every item once, in order.
func testQueryPages(t *testing.T, tb table.Table, prefix string) {
	const n = 700
	pad := strings.Repeat("x", 2000) // 700 items of 2 KB: about 1.4 MB, two of DynamoDB's pages
	for i := range n {
		put(t, tb, table.Key{Part: prefix, Sort: fmt.Sprintf("i%04d", i)}, table.Item{"n": int64(i), "pad": pad})
	}
	next := 0
	err := tb.Query(ctxFor(t), prefix, "i", func(sort string, it table.Item) error {
		if want := fmt.Sprintf("i%04d", next); sort != want || it.Int("n") != int64(next) {
			return fmt.Errorf("item %d is %s (n=%d), want %s", next, sort, it.Int("n"), want)
		}
		next++
		return nil
	})
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	if next != n {
		t.Errorf("Query returned %d items, want %d", next, n)
	}
}

// testBadKeys are refused by every call, with ErrBadKey, before anything is written.
func testBadKeys(t *testing.T, tb table.Table, prefix string) {
	for _, k := range []table.Key{
		{Part: "", Sort: "s"}, {Part: prefix, Sort: ""}, {Part: prefix + table.Sep, Sort: "s"},
		{Part: prefix, Sort: strings.Repeat("s", table.MaxSortBytes+1)},
	} {
		if err := tb.Put(ctxFor(t), k, table.Item{"a": "b"}, table.Cond{}); !errors.Is(err, table.ErrBadKey) {
			t.Errorf("Put(%q) = %v, want ErrBadKey", k.String(), err)
		}
		if _, err := tb.Get(ctxFor(t), k); !errors.Is(err, table.ErrBadKey) {
			t.Errorf("Get(%q) = %v, want ErrBadKey", k.String(), err)
		}
	}
	if err := tb.Query(ctxFor(t), "", "", func(string, table.Item) error { return nil }); !errors.Is(err, table.ErrBadKey) {
		t.Errorf("Query of no partition = %v, want ErrBadKey", err)
	}
}

// testQueryAfter reads partitions from after a sort key, an item's or one no item has (one read
// and deleted since): the items with the prefix whose sort keys come after it, in order, as a
// filter of the whole partition's keys says.
func testQueryAfter(t *testing.T, tb table.Table, prefix string) {
	part := prefix + "p"
	keys := []string{"A/1", "a", "a%/1", "a/1", "a/2", "a/3x", "a_/1", "b/1"} // in sort-key order
	for i, k := range keys {
		put(t, tb, table.Key{Part: part, Sort: k}, table.Item{"n": int64(i)})
	}
	put(t, tb, table.Key{Part: prefix + "p2", Sort: "a/9"}, table.Item{"n": int64(99)})
	afters := append([]string{"", "0", "a/", "a/1x", "a/0", "a/9", "a%", "a0", "b", "zz", "~"}, keys...)
	for _, p := range []string{"", "a", "a/", "b/", "c"} {
		for _, after := range afters {
			var want []string
			for _, k := range keys {
				if strings.HasPrefix(k, p) && k > after {
					want = append(want, k)
				}
			}
			var got []string
			err := tb.QueryAfter(ctxFor(t), part, p, after, func(sort string, it table.Item) error {
				if n := it.Int("n"); n < 0 || int(n) >= len(keys) || keys[n] != sort {
					t.Errorf("QueryAfter(%q, %q) returned %s with n=%d", p, after, sort, n)
				}
				got = append(got, sort)
				return nil
			})
			if err != nil {
				t.Fatalf("QueryAfter(%q, %q): %v", p, after, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("QueryAfter(%q, %q) = %q, want %q", p, after, got, want)
			}
		}
	}
	t.Run("AfterADeletedItem", func(t *testing.T) {
		if err := tb.Delete(ctxFor(t), table.Key{Part: part, Sort: "a/2"}, table.Cond{}); err != nil {
			t.Fatal(err)
		}
		var got []string
		err := tb.QueryAfter(ctxFor(t), part, "a/", "a/2", func(sort string, _ table.Item) error {
			got = append(got, sort)
			return nil
		})
		if err != nil || !reflect.DeepEqual(got, []string{"a/3x"}) {
			t.Errorf("QueryAfter a deleted item = %q, %v; want [a/3x]", got, err)
		}
	})
	t.Run("BadKey", func(t *testing.T) {
		if err := tb.QueryAfter(ctxFor(t), "", "", "a", func(string, table.Item) error { return nil }); !errors.Is(err, table.ErrBadKey) {
			t.Errorf("QueryAfter of no partition = %v, want ErrBadKey", err)
		}
	})
}

// testQueryAfterPages reads a partition larger than a page from after an item in its middle, and
// from each page's last item: every item after it once, in order.
func testQueryAfterPages(t *testing.T, tb table.Table, prefix string) {
	const n = 700
	pad := strings.Repeat("x", 2000) // as testQueryPages: two of DynamoDB's pages
	for i := range n {
		put(t, tb, table.Key{Part: prefix, Sort: fmt.Sprintf("i%04d", i)}, table.Item{"n": int64(i), "pad": pad})
	}
	for _, from := range []int{0, 349, 499, 500, 698, 699} {
		next := from + 1
		err := tb.QueryAfter(ctxFor(t), prefix, "i", fmt.Sprintf("i%04d", from), func(sort string, it table.Item) error {
			if want := fmt.Sprintf("i%04d", next); sort != want || it.Int("n") != int64(next) {
				return fmt.Errorf("item %d is %s (n=%d), want %s", next, sort, it.Int("n"), want)
			}
			next++
			return nil
		})
		if err != nil {
			t.Fatalf("QueryAfter i%04d: %v", from, err)
		}
		if next != n {
			t.Errorf("QueryAfter i%04d read up to item %d, want %d", from, next, n)
		}
	}
}
