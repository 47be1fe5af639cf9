package sqlite

import (
	"fmt"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// eval reports whether c holds for it (nil: no item), with DynamoDB's rules: the zero Cond holds,
// comparisons of a missing attribute or of different types are false, and <> is true for them.
func eval(c table.Cond, it table.Item) (bool, error) {
	switch c.Op {
	case "":
		return true, nil
	case table.OpItemExists:
		return it != nil, nil
	case table.OpItemNotExists:
		return it == nil, nil
	case table.OpAttrExists:
		_, ok := it[c.Name]
		return ok, nil
	case table.OpAttrNotExists:
		_, ok := it[c.Name]
		return !ok, nil
	case table.OpEq, table.OpNe, table.OpLt, table.OpLe, table.OpGt, table.OpGe:
		v, present := it[c.Name]
		cmp, comparable := 0, false
		if present {
			cmp, comparable = compare(v, c.Value)
		}
		if c.Op == table.OpNe {
			return !comparable || cmp != 0, nil
		}
		if !comparable {
			return false, nil
		}
		if _, isBool := v.(bool); isBool && c.Op != table.OpEq {
			return false, nil
		}
		switch c.Op {
		case table.OpEq:
			return cmp == 0, nil
		case table.OpLt:
			return cmp < 0, nil
		case table.OpLe:
			return cmp <= 0, nil
		case table.OpGt:
			return cmp > 0, nil
		default:
			return cmp >= 0, nil
		}
	case table.OpAnd, table.OpOr:
		if len(c.Sub) == 0 {
			return false, fmt.Errorf("condition %s has no operands", c.Op)
		}
		for _, sub := range c.Sub {
			ok, err := eval(sub, it)
			if err != nil {
				return false, err
			}
			if ok == (c.Op == table.OpOr) {
				return ok, nil
			}
		}
		return c.Op == table.OpAnd, nil
	case table.OpNot:
		if len(c.Sub) != 1 {
			return false, fmt.Errorf("condition not needs 1 operand, has %d", len(c.Sub))
		}
		ok, err := eval(c.Sub[0], it)
		return !ok, err
	}
	return false, fmt.Errorf("unknown condition operator %q", c.Op)
}
