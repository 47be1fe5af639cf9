// Package tabletest is the conformance suite for the table port. Every adapter (DynamoDB against
// DynamoDB Local or LocalStack, and the embedded SQLite table) runs the same Run from its own
// tests, so that semantics which differ between backends show up as test failures, in the style
// of upspin's storagetest.
//
// Each subtest writes only keys under its own random prefix, so a table may be shared by subtests
// and by concurrent runs.
package tabletest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Run runs the conformance suite. newTable is called once per subtest; it may return the same
// table every time.
func Run(t *testing.T, newTable func(t *testing.T) table.Table) {
	tests := []struct {
		name string
		fn   func(t *testing.T, tb table.Table, prefix string)
	}{
		{"GetMissing", testGetMissing},
		{"GetMany", testGetMany},
		{"Conditions", testConditions},
		{"PutReplaces", testPutReplaces},
		{"Update", testUpdate},
		{"UpdateConditionFailed", testUpdateConditionFailed},
		{"UpdateNamesEachAttributeOnce", testUpdateNamesEachAttributeOnce},
		{"Delete", testDelete},
		{"Query", testQuery},
		{"QueryPages", testQueryPages},
		{"QueryAfter", testQueryAfter},
		{"QueryAfterPages", testQueryAfterPages},
		{"BadKeys", testBadKeys},
		{"RoundTrip", testRoundTrip},
		{"ReservedWords", testReservedWords},
		{"ConcurrentClaim", testConcurrentClaim},
		{"ConcurrentAdd", testConcurrentAdd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newTable(t), uniquePrefix(t))
		})
	}
}

func uniquePrefix(t *testing.T) string {
	t.Helper()
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatalf("random prefix: %v", err)
	}
	return "tt-" + hex.EncodeToString(r[:]) + "/"
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, tb table.Table, key table.Key, it table.Item) {
	t.Helper()
	if err := tb.Put(ctxFor(t), key, it, table.Cond{}); err != nil {
		t.Fatalf("Put %s: %v", key, err)
	}
}

// get returns the item, or nil when there is none.
func get(t *testing.T, tb table.Table, key table.Key) table.Item {
	t.Helper()
	it, err := tb.Get(ctxFor(t), key)
	if errors.Is(err, table.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	return it
}

func wantItem(t *testing.T, what string, got, want table.Item) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// wantCondFailed checks that err is a *ConditionFailedError for key carrying old.
func wantCondFailed(t *testing.T, err error, key table.Key, old table.Item) {
	t.Helper()
	cf, ok := table.IsConditionFailed(err)
	if !ok {
		t.Fatalf("err = %v, want a *ConditionFailedError", err)
	}
	if cf.Key != key {
		t.Errorf("ConditionFailedError.Key = %q, want %q", cf.Key, key)
	}
	if old == nil && cf.Item != nil {
		t.Errorf("ConditionFailedError.Item = %#v, want nil (no item existed)", cf.Item)
	}
	if old != nil {
		wantItem(t, "ConditionFailedError.Item", cf.Item, old)
	}
}

func testGetMissing(t *testing.T, tb table.Table, prefix string) {
	_, err := tb.Get(ctxFor(t), table.Key{Part: prefix, Sort: "missing"})
	if !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get missing: err = %v, want table.ErrNotFound", err)
	}
}

// testGetMany reads more keys than one request of either adapter takes (DynamoDB's BatchGetItem
// takes 100, the SQLite adapter names 200 a query), some missing and some twice.
func testGetMany(t *testing.T, tb table.Table, prefix string) {
	ctx := ctxFor(t)
	if got, err := tb.GetMany(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("GetMany(no keys) = %v, %v; want an empty map", got, err)
	}
	want := map[table.Key]table.Item{}
	var keys []table.Key
	for i := range 250 {
		key := table.Key{Part: prefix, Sort: fmt.Sprintf("k%03d", i)}
		keys = append(keys, key)
		if i%5 == 0 {
			continue // no item: left out of the answer
		}
		it := table.Item{"n": int64(i), "s": fmt.Sprint("item ", i), "ok": i%2 == 0}
		put(t, tb, key, it)
		want[key] = it
	}
	keys = append(keys, keys[1], keys[2], table.Key{Part: prefix, Sort: "k000"}) // twice, and a missing key twice
	got, err := tb.GetMany(ctx, keys)
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(got) != len(want) {
		t.Errorf("GetMany returned %d items, want %d", len(got), len(want))
	}
	for k, it := range want {
		wantItem(t, "GetMany["+k.String()+"]", got[k], it)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("GetMany returned %s, which has no item", k)
		}
	}
	// It reads what the last write left, as Get does.
	if _, err := tb.Update(ctx, keys[1], table.Update{Add: map[string]int64{"n": 1000}}, table.Cond{}); err != nil {
		t.Fatal(err)
	}
	got, err = tb.GetMany(ctx, keys[1:2])
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if n := got[keys[1]].Int("n"); n != 1001 {
		t.Errorf("GetMany after an update: n = %d, want 1001", n)
	}
}

func testConditions(t *testing.T, tb table.Table, prefix string) {
	base := table.Item{"status": "done", "depth": int64(3), "ok": true, "leaseUntil": int64(100)}
	isTrue, isFalse := table.Exists("status"), table.Exists("nope")
	tests := []struct {
		name    string
		missing bool // no item before the write
		cond    table.Cond
		want    bool
	}{
		{"ItemExists/present", false, table.ItemExists(), true},
		{"ItemExists/missing", true, table.ItemExists(), false},
		{"ItemNotExists/present", false, table.ItemNotExists(), false},
		{"ItemNotExists/missing", true, table.ItemNotExists(), true},
		{"Exists/present", false, table.Exists("status"), true},
		{"Exists/absent", false, table.Exists("nope"), false},
		{"Exists/missingItem", true, table.Exists("status"), false},
		{"NotExists/absent", false, table.NotExists("nope"), true},
		{"NotExists/present", false, table.NotExists("status"), false},
		{"NotExists/missingItem", true, table.NotExists("status"), true},
		{"Eq/string", false, table.Eq("status", "done"), true},
		{"Eq/stringOther", false, table.Eq("status", "todo"), false},
		{"Eq/int", false, table.Eq("depth", int64(3)), true},
		{"Eq/intOther", false, table.Eq("depth", int64(4)), false},
		{"Eq/bool", false, table.Eq("ok", true), true},
		{"Eq/boolOther", false, table.Eq("ok", false), false},
		{"Eq/typeMismatch", false, table.Eq("depth", "3"), false},
		{"Eq/absent", false, table.Eq("nope", "x"), false},
		{"Ne/differs", false, table.Ne("status", "todo"), true},
		{"Ne/equal", false, table.Ne("status", "done"), false},
		{"Ne/absent", false, table.Ne("nope", "x"), true},
		{"Ne/missingItem", true, table.Ne("status", "x"), true},
		{"Lt/true", false, table.Lt("depth", int64(4)), true},
		{"Lt/equal", false, table.Lt("depth", int64(3)), false},
		{"Lt/string", false, table.Lt("status", "e"), true},
		{"Lt/stringFalse", false, table.Lt("status", "a"), false},
		{"Lt/typeMismatch", false, table.Lt("depth", "9"), false},
		{"Lt/absent", false, table.Lt("nope", int64(9)), false},
		{"Lt/negative", false, table.Lt("depth", int64(-1)), false},
		{"Le/equal", false, table.Le("depth", int64(3)), true},
		{"Le/false", false, table.Le("depth", int64(2)), false},
		{"Gt/true", false, table.Gt("depth", int64(2)), true},
		{"Gt/equal", false, table.Gt("depth", int64(3)), false},
		{"Gt/large", false, table.Gt("leaseUntil", int64(99)), true},
		{"Ge/equal", false, table.Ge("depth", int64(3)), true},
		{"Ge/false", false, table.Ge("depth", int64(4)), false},
		{"And/true", false, table.And(isTrue, table.Eq("depth", int64(3))), true},
		{"And/false", false, table.And(isTrue, isFalse), false},
		{"Or/true", false, table.Or(isFalse, isTrue), true},
		{"Or/false", false, table.Or(isFalse, table.Eq("status", "x")), false},
		{"Not/true", false, table.Not(isFalse), true},
		{"Not/false", false, table.Not(isTrue), false},
		{"Claim/free", true, table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(200))), true},
		{"Claim/expired", false, table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(200))), true},
		{"Claim/held", false, table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(50))), false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := table.Key{Part: prefix, Sort: fmt.Sprintf("cond-%d", i)}
			var old table.Item
			if !tt.missing {
				old = table.Item{}
				for k, v := range base {
					old[k] = v
				}
				put(t, tb, key, old)
			}
			next := table.Item{"status": "written", "n": int64(i)}
			err := tb.Put(ctxFor(t), key, next, tt.cond)
			if tt.want {
				if err != nil {
					t.Fatalf("Put with a true condition: %v", err)
				}
				wantItem(t, "item after the write", get(t, tb, key), next)
				return
			}
			wantCondFailed(t, err, key, old)
			wantItem(t, "item after the failed write", get(t, tb, key), old)

			// The same condition on Update and Delete.
			_, err = tb.Update(ctxFor(t), key, table.Update{Set: map[string]any{"x": "y"}}, tt.cond)
			wantCondFailed(t, err, key, old)
			err = tb.Delete(ctxFor(t), key, tt.cond)
			wantCondFailed(t, err, key, old)
			wantItem(t, "item after the failed update and delete", get(t, tb, key), old)
		})
	}
}

func testPutReplaces(t *testing.T, tb table.Table, prefix string) {
	key := table.Key{Part: prefix, Sort: "k"}
	put(t, tb, key, table.Item{"a": "1", "b": int64(2)})
	put(t, tb, key, table.Item{"c": true})
	wantItem(t, "item", get(t, tb, key), table.Item{"c": true})
}

func testUpdate(t *testing.T, tb table.Table, prefix string) {
	tests := []struct {
		name   string
		before table.Item // nil: no item
		u      table.Update
		want   table.Item
	}{
		{"CreatesMissingItem", nil,
			table.Update{Set: map[string]any{"status": "new"}, Add: map[string]int64{"count": 2}},
			table.Item{"status": "new", "count": int64(2)}},
		{"AddMissingAttrStartsAtZero", table.Item{"status": "x"},
			table.Update{Add: map[string]int64{"count": 5}},
			table.Item{"status": "x", "count": int64(5)}},
		{"AddAccumulates", table.Item{"count": int64(5)},
			table.Update{Add: map[string]int64{"count": 3}},
			table.Item{"count": int64(8)}},
		{"AddNegative", table.Item{"count": int64(5)},
			table.Update{Add: map[string]int64{"count": -7}},
			table.Item{"count": int64(-2)}},
		{"SetOverwritesAndKeepsOthers", table.Item{"status": "a", "depth": int64(1), "keep": true},
			table.Update{Set: map[string]any{"status": "b", "ok": false}},
			table.Item{"status": "b", "depth": int64(1), "keep": true, "ok": false}},
		{"Remove", table.Item{"status": "a", "leaseUntil": int64(9)},
			table.Update{Remove: []string{"leaseUntil", "absent"}},
			table.Item{"status": "a"}},
		{"SetAddRemoveTogether", table.Item{"a": "1", "n": int64(1), "gone": "x"},
			table.Update{Set: map[string]any{"a": "2"}, Add: map[string]int64{"n": 1, "m": 10}, Remove: []string{"gone"}},
			table.Item{"a": "2", "n": int64(2), "m": int64(10)}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := table.Key{Part: prefix, Sort: fmt.Sprintf("upd-%d", i)}
			if tt.before != nil {
				put(t, tb, key, tt.before)
			}
			got, err := tb.Update(ctxFor(t), key, tt.u, table.Cond{})
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			wantItem(t, "Update result (ALL_NEW)", got, tt.want)
			wantItem(t, "Get after Update", get(t, tb, key), tt.want)
		})
	}
}

func testUpdateConditionFailed(t *testing.T, tb table.Table, prefix string) {
	t.Run("Missing", func(t *testing.T) {
		key := table.Key{Part: prefix, Sort: "missing"}
		_, err := tb.Update(ctxFor(t), key, table.Update{Add: map[string]int64{"count": 1}}, table.ItemExists())
		wantCondFailed(t, err, key, nil)
		if it := get(t, tb, key); it != nil {
			t.Errorf("a failed update created %#v", it)
		}
	})
	t.Run("Present", func(t *testing.T) {
		key := table.Key{Part: prefix, Sort: "present"}
		old := table.Item{"status": "done", "count": int64(1)}
		put(t, tb, key, old)
		_, err := tb.Update(ctxFor(t), key,
			table.Update{Set: map[string]any{"status": "again"}, Add: map[string]int64{"count": 1}},
			table.Eq("status", "todo"))
		wantCondFailed(t, err, key, old)
		wantItem(t, "item after the failed update", get(t, tb, key), old)
	})
}

func testDelete(t *testing.T, tb table.Table, prefix string) {
	t.Run("MissingNoCondition", func(t *testing.T) {
		if err := tb.Delete(ctxFor(t), table.Key{Part: prefix, Sort: "none"}, table.Cond{}); err != nil {
			t.Fatalf("Delete missing: %v", err)
		}
	})
	t.Run("MissingItemExists", func(t *testing.T) {
		err := tb.Delete(ctxFor(t), table.Key{Part: prefix, Sort: "none2"}, table.ItemExists())
		wantCondFailed(t, err, table.Key{Part: prefix, Sort: "none2"}, nil)
	})
	t.Run("Conditional", func(t *testing.T) {
		key := table.Key{Part: prefix, Sort: "k"}
		old := table.Item{"owner": "w1"}
		put(t, tb, key, old)
		wantCondFailed(t, tb.Delete(ctxFor(t), key, table.Eq("owner", "w2")), key, old)
		wantItem(t, "item after the failed delete", get(t, tb, key), old)
		if err := tb.Delete(ctxFor(t), key, table.Eq("owner", "w1")); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if it := get(t, tb, key); it != nil {
			t.Errorf("item after Delete = %#v, want none", it)
		}
	})
}

func testRoundTrip(t *testing.T, tb table.Table, prefix string) {
	tests := []struct {
		name string
		v    any
	}{
		{"Zero", int64(0)},
		{"Negative", int64(-42)},
		{"MaxInt64", int64(math.MaxInt64)},
		{"MinInt64", int64(math.MinInt64)},
		{"BeyondFloat", int64(1<<53 + 1)},
		{"UnixNano", int64(1_780_000_000_123_456_789)},
		{"String", "https://example.com/a?b=c&d=é"},
		{"EmptyString", ""},
		{"NumericString", "12"},
		{"True", true},
		{"False", false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := table.Key{Part: prefix, Sort: fmt.Sprintf("rt-%d", i)}
			put(t, tb, key, table.Item{"v": tt.v})
			got := get(t, tb, key)
			if !reflect.DeepEqual(got["v"], tt.v) {
				t.Errorf("round trip of %#v (%T) gave %#v (%T)", tt.v, tt.v, got["v"], got["v"])
			}
			if _, ok := tt.v.(int64); ok {
				upd, err := tb.Update(ctxFor(t), key, table.Update{Set: map[string]any{"w": tt.v}}, table.Cond{})
				if err != nil {
					t.Fatalf("Update: %v", err)
				}
				if !reflect.DeepEqual(upd["w"], tt.v) {
					t.Errorf("Update SET of %#v returned %#v (%T)", tt.v, upd["w"], upd["w"])
				}
			}
		})
	}
}

func testReservedWords(t *testing.T, tb table.Table, prefix string) {
	key := table.Key{Part: prefix, Sort: "reserved"}
	it := table.Item{"status": "queued", "url": "https://example.com/", "owner": "w1",
		"depth": int64(2), "name": "n", "count": int64(1)}
	if err := tb.Put(ctxFor(t), key, it, table.ItemNotExists()); err != nil {
		t.Fatalf("Put: %v", err)
	}
	cond := table.And(table.Eq("status", "queued"), table.Exists("url"), table.Eq("owner", "w1"),
		table.Lt("depth", int64(5)), table.Exists("name"), table.Ge("count", int64(1)))
	got, err := tb.Update(ctxFor(t), key, table.Update{
		Set:    map[string]any{"status": "fetched", "url": "https://example.com/x"},
		Add:    map[string]int64{"count": 1, "depth": 1},
		Remove: []string{"owner", "name"},
	}, cond)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	want := table.Item{"status": "fetched", "url": "https://example.com/x", "depth": int64(3), "count": int64(2)}
	wantItem(t, "Update result", got, want)
	if err := tb.Delete(ctxFor(t), key, table.And(table.Eq("status", "fetched"), table.NotExists("owner"))); err != nil {
		t.Fatalf("Delete: %v", err)
	}
}
