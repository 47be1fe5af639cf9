package tabletest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Faults is a table.Table that breaks chosen writes the way AWS breaks them, for the tests of the
// table's users. A write that a Replay rule picks is applied, and then sent again, and the second
// answer is returned: what the SDK's retryer does when DynamoDB applied a write and its answer was
// lost (a 500 that "may have succeeded", a reset connection). A write that a Fail rule picks is
// not applied, and fails with ErrInjected; one that a Lost rule picks is applied, and then fails
// with ErrInjected, as when the SDK's retries ran out. Reads and unpicked writes go through.
//
// Rules are matched in order and each picks by operation, key (or sort-key prefix) and the nth write it matches,
// so a test names the step it breaks ("the second update of a group's item") rather than a moment.
// It is safe for concurrent use.
type Faults struct {
	table.Table
	mu    sync.Mutex
	rules []*rule
	log   []string
}

// Rule picks writes to break.
type Rule struct {
	// Op is "put", "update" or "delete"; "" picks any write.
	Op string
	// Key picks the writes to that key alone, unless it is the zero Key.
	Key table.Key
	// Sort picks the writes whose sort key starts with it (the kind of item, say), in any partition.
	Sort string
	// Nth picks only the nth write the rule matches (1 is the first); 0 picks every one.
	Nth int
	// Fail: the write is not applied and fails with ErrInjected. Lost: it is applied, and fails
	// with ErrInjected. Neither: it is applied and replayed.
	Fail, Lost bool
}

type rule struct {
	Rule
	seen int
}

// ErrInjected is the error of a write that a Fail rule picked.
var ErrInjected = errors.New("tabletest: injected failure")

// NewFaults returns t with the rules applied to its writes.
func NewFaults(t table.Table, rules ...Rule) *Faults {
	f := &Faults{Table: t}
	for _, r := range rules {
		f.rules = append(f.rules, &rule{Rule: r})
	}
	return f
}

// Add adds rules after those there are.
func (f *Faults) Add(rules ...Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range rules {
		f.rules = append(f.rules, &rule{Rule: r})
	}
}

// Injected lists the faults injected so far, as "replay update <key>", "fail delete <key>" or
// "lose put <key>".
func (f *Faults) Injected() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// pick returns the rule that picks this write, if any, and logs the fault.
func (f *Faults) pick(op string, key table.Key) (r *rule, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		if r.Op != "" && r.Op != op || r.Key != (table.Key{}) && r.Key != key || !strings.HasPrefix(key.Sort, r.Sort) {
			continue
		}
		r.seen++
		if r.Nth != 0 && r.seen != r.Nth {
			continue
		}
		what := "replay"
		switch {
		case r.Fail:
			what = "fail"
		case r.Lost:
			what = "lose"
		}
		f.log = append(f.log, fmt.Sprintf("%s %s %s", what, op, key))
		return r, true
	}
	return nil, false
}

// Put applies the put, and replays or fails it when a rule picks it.
func (f *Faults) Put(ctx context.Context, key table.Key, item table.Item, cond table.Cond) error {
	r, ok := f.pick("put", key)
	switch {
	case !ok:
		return f.Table.Put(ctx, key, item, cond)
	case r.Fail:
		return fmt.Errorf("put %s: %w", key, ErrInjected)
	}
	if err := f.Table.Put(ctx, key, item, cond); err != nil {
		return err // not applied: nothing to replay
	}
	if r.Lost {
		return answerLost("put", key)
	}
	return f.Table.Put(ctx, key, item, cond)
}

// Update applies the update, and replays or fails it when a rule picks it.
func (f *Faults) Update(ctx context.Context, key table.Key, u table.Update, cond table.Cond) (table.Item, error) {
	r, ok := f.pick("update", key)
	switch {
	case !ok:
		return f.Table.Update(ctx, key, u, cond)
	case r.Fail:
		return nil, fmt.Errorf("update %s: %w", key, ErrInjected)
	}
	if it, err := f.Table.Update(ctx, key, u, cond); err != nil {
		return it, err
	}
	if r.Lost {
		return nil, answerLost("update", key)
	}
	return f.Table.Update(ctx, key, u, cond)
}

// Delete applies the delete, and replays or fails it when a rule picks it.
func (f *Faults) Delete(ctx context.Context, key table.Key, cond table.Cond) error {
	r, ok := f.pick("delete", key)
	switch {
	case !ok:
		return f.Table.Delete(ctx, key, cond)
	case r.Fail:
		return fmt.Errorf("delete %s: %w", key, ErrInjected)
	}
	if err := f.Table.Delete(ctx, key, cond); err != nil {
		return err
	}
	if r.Lost {
		return answerLost("delete", key)
	}
	return f.Table.Delete(ctx, key, cond)
}

// answerLost is the error of an applied write whose answer a Lost rule drops.
func answerLost(op string, key table.Key) error {
	return fmt.Errorf("%s %s: applied, and its answer lost: %w", op, key, ErrInjected)
}

var _ table.Table = (*Faults)(nil)
