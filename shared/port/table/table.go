// Package table is the port for the crawler's state table. Its semantics are DynamoDB's for one
// table with a string partition key and a string sort key: items are maps of attributes, every
// write can carry a condition, and a failed condition changes nothing. The crawler builds dedup,
// URL claims with leases, per-host politeness slots and crawl counters on it.
//
// There is no Scan. What is read together lives in one partition and is read by Query, a page at
// a time, at a cost in proportion to what it returns: a crawl's cost must not depend on what else
// the table holds (docs/state.md).
//
// Conditions and updates are plain data (Cond, Update) so that the DynamoDB adapter can turn them
// into expressions with every attribute name aliased, and the embedded adapter can evaluate them
// inside one SQLite transaction. Both adapters pass the conformance suite in tabletest.
//
// Attribute values are string, int64 or bool. Adapters return numbers as int64.
// All methods are safe for concurrent use.
package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// DynamoDB's limits on a key's parts; callers hash long ids (see the frontier).
const (
	MaxPartBytes = 2048
	MaxSortBytes = 1024
)

// Key is an item's key: the partition it lives in and its sort key there. Items of one partition
// are read together by Query, in the order of their sort keys.
type Key struct {
	Part, Sort string
}

// String is the key as errors and logs show it.
func (k Key) String() string { return k.Part + "|" + k.Sort }

// Sep is the one byte no key part may hold: the embedded adapter joins the parts with it.
const Sep = "\x1f"

// ErrBadKey is the error of a key that no table can store.
var ErrBadKey = errors.New("bad key")

// Check returns an error wrapping ErrBadKey unless both parts are non-empty (DynamoDB refuses
// an empty key attribute), within DynamoDB's lengths, and free of Sep.
func (k Key) Check() error {
	switch {
	case k.Part == "" || len(k.Part) > MaxPartBytes:
		return fmt.Errorf("%w %s: a partition of %d bytes, must be 1 to %d", ErrBadKey, k, len(k.Part), MaxPartBytes)
	case k.Sort == "" || len(k.Sort) > MaxSortBytes:
		return fmt.Errorf("%w %s: a sort key of %d bytes, must be 1 to %d", ErrBadKey, k, len(k.Sort), MaxSortBytes)
	case strings.Contains(k.Part, Sep) || strings.Contains(k.Sort, Sep):
		return fmt.Errorf("%w %q: holds the byte 0x1f", ErrBadKey, k.String())
	}
	return nil
}

// ErrNotFound is returned by Get when no item has the key.
var ErrNotFound = errors.New("item not found")

// Item is one item's attributes, without its key.
type Item map[string]any

// Has reports whether the attribute is present.
func (it Item) Has(name string) bool {
	_, ok := it[name]
	return ok
}

// String returns the attribute as a string, or "" when it is missing or not a string.
func (it Item) String(name string) string {
	s, _ := it[name].(string)
	return s
}

// Int returns the attribute as an int64, or 0 when it is missing or not a number.
func (it Item) Int(name string) int64 {
	switch v := it[name].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	}
	return 0
}

// Bool returns the attribute as a bool, or false when it is missing or not a bool.
func (it Item) Bool(name string) bool {
	b, _ := it[name].(bool)
	return b
}

// ConditionFailedError reports that a write's condition did not hold. Item is the item as it was
// (nil when there was none), as DynamoDB returns it with ReturnValuesOnConditionCheckFailure=ALL_OLD.
type ConditionFailedError struct {
	Key  Key
	Item Item
}

func (e *ConditionFailedError) Error() string {
	return fmt.Sprintf("condition failed for %s", e.Key)
}

// IsConditionFailed reports whether err is (or wraps) a *ConditionFailedError, and returns it.
func IsConditionFailed(err error) (*ConditionFailedError, bool) {
	var cf *ConditionFailedError
	ok := errors.As(err, &cf)
	return cf, ok
}

// Op is a condition's operator.
type Op string

// The condition operators. Comparisons between values of different types are false, as in DynamoDB.
const (
	OpItemExists    Op = "item_exists"     // the item exists
	OpItemNotExists Op = "item_not_exists" // attribute_not_exists(pk)
	OpAttrExists    Op = "attr_exists"     // attribute_exists(Name)
	OpAttrNotExists Op = "attr_not_exists" // attribute_not_exists(Name)
	OpEq            Op = "eq"              // Name = Value
	OpNe            Op = "ne"              // Name <> Value (true when Name is missing)
	OpLt            Op = "lt"              // Name < Value
	OpLe            Op = "le"              // Name <= Value
	OpGt            Op = "gt"              // Name > Value
	OpGe            Op = "ge"              // Name >= Value
	OpAnd           Op = "and"
	OpOr            Op = "or"
	OpNot           Op = "not"
)

// Cond is a write condition. The zero Cond (Op "") means no condition.
type Cond struct {
	Op    Op
	Name  string
	Value any
	Sub   []Cond
}

// IsZero reports whether c is the empty condition.
func (c Cond) IsZero() bool { return c.Op == "" }

// ItemExists holds when the item exists.
func ItemExists() Cond { return Cond{Op: OpItemExists} }

// ItemNotExists holds when no item has the key.
func ItemNotExists() Cond { return Cond{Op: OpItemNotExists} }

// Exists holds when the attribute is present.
func Exists(name string) Cond { return Cond{Op: OpAttrExists, Name: name} }

// NotExists holds when the attribute is absent (or the item is).
func NotExists(name string) Cond { return Cond{Op: OpAttrNotExists, Name: name} }

// Eq holds when the attribute equals v.
func Eq(name string, v any) Cond { return Cond{Op: OpEq, Name: name, Value: v} }

// Ne holds when the attribute is absent or differs from v.
func Ne(name string, v any) Cond { return Cond{Op: OpNe, Name: name, Value: v} }

// Lt holds when the attribute is present and less than v.
func Lt(name string, v any) Cond { return Cond{Op: OpLt, Name: name, Value: v} }

// Le holds when the attribute is present and at most v.
func Le(name string, v any) Cond { return Cond{Op: OpLe, Name: name, Value: v} }

// Gt holds when the attribute is present and greater than v.
func Gt(name string, v any) Cond { return Cond{Op: OpGt, Name: name, Value: v} }

// Ge holds when the attribute is present and at least v.
func Ge(name string, v any) Cond { return Cond{Op: OpGe, Name: name, Value: v} }

// And holds when every sub-condition holds.
func And(c ...Cond) Cond { return Cond{Op: OpAnd, Sub: c} }

// Or holds when any sub-condition holds.
func Or(c ...Cond) Cond { return Cond{Op: OpOr, Sub: c} }

// Not holds when c does not.
func Not(c Cond) Cond { return Cond{Op: OpNot, Sub: []Cond{c}} }

// Update describes an UpdateItem: SET, ADD (numbers) and REMOVE. An update of a missing item
// creates it, as DynamoDB does.
type Update struct {
	Set    map[string]any
	Add    map[string]int64
	Remove []string
}

// ErrOverlap is the error of an update that names an attribute more than once.
var ErrOverlap = errors.New("an update may name an attribute once")

// Check returns an error wrapping ErrOverlap when u names an attribute more than once: in two of
// Set, Add and Remove, or twice in Remove. DynamoDB rejects such an update ("Two document paths
// overlap"), so every adapter does, before it writes anything: one that applied it would count
// an attribute set and added twice, and the adapters would disagree.
func (u Update) Check() error {
	named := make(map[string]string, len(u.Set)+len(u.Add)+len(u.Remove))
	name := func(attr, how string) error {
		if was, ok := named[attr]; ok {
			return fmt.Errorf("%w: %q in %s and %s", ErrOverlap, attr, was, how)
		}
		named[attr] = how
		return nil
	}
	for a := range u.Set {
		named[a] = "set"
	}
	for a := range u.Add {
		if err := name(a, "add"); err != nil {
			return err
		}
	}
	for _, a := range u.Remove {
		if err := name(a, "remove"); err != nil {
			return err
		}
	}
	return nil
}

// Table is the state table.
type Table interface {
	// Get returns the item with the key, or ErrNotFound. Reads are strongly consistent.
	Get(ctx context.Context, key Key) (Item, error)
	// GetMany returns the items with the keys that exist, by key; a key with no item is left out
	// of the map, and a key given twice is read once. Reads are strongly consistent, each item as
	// of some moment during the call (not one snapshot of all of them). Any number of keys may be
	// given: the adapter splits them into requests of its own size (DynamoDB's BatchGetItem takes
	// 100). It is how a reader sums a few items written apart to keep each one cool.
	GetMany(ctx context.Context, keys []Key) (map[Key]Item, error)
	// Put replaces the whole item if cond holds; otherwise it returns a *ConditionFailedError.
	Put(ctx context.Context, key Key, item Item, cond Cond) error
	// Update applies u if cond holds and returns the item as it is afterwards (ALL_NEW);
	// otherwise it returns a *ConditionFailedError carrying the old item. An update that names an
	// attribute more than once is refused with ErrOverlap (Update.Check), and changes nothing.
	Update(ctx context.Context, key Key, u Update, cond Cond) (Item, error)
	// Delete removes the item if cond holds (deleting a missing item with no condition is not an error).
	Delete(ctx context.Context, key Key, cond Cond) error
	// Query calls fn for every item of the partition part whose sort key starts with prefix (""
	// for all of them), in the order of their sort keys, until fn returns an error, which it
	// returns wrapped. It reads a page at a time with strongly consistent reads, and its cost is
	// in proportion to the items it returns, whatever the rest of the table holds. Items written
	// during the call may or may not be seen.
	Query(ctx context.Context, part, prefix string, fn func(sort string, item Item) error) error
	// QueryAfter is Query from the first item whose sort key comes after after (in the order of
	// sort keys; "" reads from the partition's first, as Query does): a read of a partition stopped
	// at an item goes on after it, whether that item is still there or not. An after beyond the
	// prefix's items reads none.
	QueryAfter(ctx context.Context, part, prefix, after string, fn func(sort string, item Item) error) error
}

// Admin creates tables. The local runner and the tests use it; on AWS the CDK stack does.
type Admin interface {
	// CreateTable creates the named table (partition key "pk", sort key "sk", TTL attribute
	// "expiresAt") if it does not exist.
	CreateTable(ctx context.Context, name string) error
}

// KeyAttr and TTLAttr are the table's schema on DynamoDB.
const (
	KeyAttr  = "pk"
	SortAttr = "sk"
	TTLAttr  = "expiresAt"
)
