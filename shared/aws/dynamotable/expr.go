package dynamotable

import (
	"errors"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// buildExpression turns a condition and an optional update into one expression whose names and
// values are all placeholders (#n, :v). Either part may be empty.
func buildExpression(c table.Cond, u *table.Update) (expression.Expression, error) {
	b := expression.NewBuilder()
	if !c.IsZero() {
		cb, err := condition(c)
		if err != nil {
			return expression.Expression{}, err
		}
		b = b.WithCondition(cb)
	}
	if u != nil && !updateIsEmpty(*u) {
		ub, err := update(*u)
		if err != nil {
			return expression.Expression{}, err
		}
		b = b.WithUpdate(ub)
	}
	expr, err := b.Build()
	if err != nil {
		return expression.Expression{}, fmt.Errorf("build expression: %w", err)
	}
	return expr, nil
}

// keyCondition is pk = part, and begins_with(sk, prefix) unless prefix is empty.
func keyCondition(part, prefix string) (expression.Expression, error) {
	kc := expression.Key(table.KeyAttr).Equal(expression.Value(part))
	if prefix != "" {
		kc = kc.And(expression.Key(table.SortAttr).BeginsWith(prefix))
	}
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return expression.Expression{}, fmt.Errorf("build key condition: %w", err)
	}
	return expr, nil
}

// name is an attribute name taken literally: a dot is part of the name, not a path.
func name(n string) expression.NameBuilder { return expression.NameNoDotSplit(n) }

func value(v any) (expression.ValueBuilder, error) {
	av, err := marshalValue(v)
	if err != nil {
		return expression.ValueBuilder{}, err
	}
	return expression.Value(av), nil
}

func condition(c table.Cond) (expression.ConditionBuilder, error) {
	var none expression.ConditionBuilder
	switch c.Op {
	case table.OpItemExists:
		return expression.AttributeExists(name(table.KeyAttr)), nil
	case table.OpItemNotExists:
		return expression.AttributeNotExists(name(table.KeyAttr)), nil
	case table.OpAttrExists, table.OpAttrNotExists:
		if c.Name == "" {
			return none, fmt.Errorf("condition %s: %w", c.Op, errEmptyName)
		}
		if c.Op == table.OpAttrExists {
			return expression.AttributeExists(name(c.Name)), nil
		}
		return expression.AttributeNotExists(name(c.Name)), nil
	case table.OpEq, table.OpNe, table.OpLt, table.OpLe, table.OpGt, table.OpGe:
		if c.Name == "" {
			return none, fmt.Errorf("condition %s: %w", c.Op, errEmptyName)
		}
		v, err := value(c.Value)
		if err != nil {
			return none, fmt.Errorf("condition %s %s: %w", c.Op, c.Name, err)
		}
		n := name(c.Name)
		switch c.Op {
		case table.OpEq:
			return n.Equal(v), nil
		case table.OpNe:
			// The port defines Ne as true for a missing attribute; say so explicitly rather
			// than lean on how <> treats a missing operand.
			return expression.Or(expression.AttributeNotExists(n), n.NotEqual(v)), nil
		case table.OpLt:
			return n.LessThan(v), nil
		case table.OpLe:
			return n.LessThanEqual(v), nil
		case table.OpGt:
			return n.GreaterThan(v), nil
		default:
			return n.GreaterThanEqual(v), nil
		}
	case table.OpAnd, table.OpOr:
		subs := make([]expression.ConditionBuilder, 0, len(c.Sub))
		for _, s := range c.Sub {
			cb, err := condition(s)
			if err != nil {
				return none, err
			}
			subs = append(subs, cb)
		}
		switch len(subs) {
		case 0:
			return none, fmt.Errorf("condition %s: no sub-conditions", c.Op)
		case 1:
			return subs[0], nil
		}
		if c.Op == table.OpAnd {
			return expression.And(subs[0], subs[1], subs[2:]...), nil
		}
		return expression.Or(subs[0], subs[1], subs[2:]...), nil
	case table.OpNot:
		if len(c.Sub) != 1 {
			return none, fmt.Errorf("condition not: %d sub-conditions, want 1", len(c.Sub))
		}
		cb, err := condition(c.Sub[0])
		if err != nil {
			return none, err
		}
		return expression.Not(cb), nil
	}
	return none, fmt.Errorf("condition: unknown operator %q", c.Op)
}

func updateIsEmpty(u table.Update) bool {
	return len(u.Set) == 0 && len(u.Add) == 0 && len(u.Remove) == 0
}

// update builds SET, ADD and REMOVE clauses: SET and ADD in sorted name order so that equal
// updates give equal expressions, REMOVE in the order given. The key attribute cannot be updated,
// and an empty name is an error here rather than a bare "invalid parameter" from the SDK.
func update(u table.Update) (expression.UpdateBuilder, error) {
	var ub expression.UpdateBuilder
	for _, n := range sortedKeys(u.Set) {
		if n == "" {
			return ub, fmt.Errorf("update set: %w", errEmptyName)
		}
		if isKeyAttr(n) {
			return ub, errKeyUpdate
		}
		v, err := value(u.Set[n])
		if err != nil {
			return ub, fmt.Errorf("update set %s: %w", n, err)
		}
		ub = ub.Set(name(n), v)
	}
	for _, n := range sortedKeys(u.Add) {
		if n == "" {
			return ub, fmt.Errorf("update add: %w", errEmptyName)
		}
		if isKeyAttr(n) {
			return ub, errKeyUpdate
		}
		ub = ub.Add(name(n), expression.Value(u.Add[n]))
	}
	for _, n := range u.Remove {
		if n == "" {
			return ub, fmt.Errorf("update remove: %w", errEmptyName)
		}
		if isKeyAttr(n) {
			return ub, errKeyUpdate
		}
		ub = ub.Remove(name(n))
	}
	return ub, nil
}

var (
	errKeyUpdate = errors.New("update: the key attributes " + table.KeyAttr + " and " + table.SortAttr + " cannot be changed")
	// errEmptyName names the mistake; the SDK's own error for it says only "invalid parameter: NameBuilder".
	errEmptyName = errors.New("empty attribute name")
)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
