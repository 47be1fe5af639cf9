package sqlite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crawlstack/crawlstack/shared/table"
)

// encodeItem stores an item as a JSON object. Only strings, integers and bools are allowed, as
// the table port says.
func encodeItem(it table.Item) (string, error) {
	clean := make(map[string]any, len(it))
	for name, v := range it {
		if name == "" {
			return "", fmt.Errorf("an attribute name is empty")
		}
		switch v.(type) {
		case string, bool:
			clean[name] = v
		default:
			n, ok := asInt64(v)
			if !ok {
				return "", fmt.Errorf("attribute %s: unsupported type %T (want string, int64 or bool)", name, v)
			}
			clean[name] = n
		}
	}
	b, err := json.Marshal(clean)
	if err != nil {
		return "", fmt.Errorf("encode item: %w", err)
	}
	return string(b), nil
}

// decodeItem reads an item stored by encodeItem; numbers come back as int64.
func decodeItem(doc string) (table.Item, error) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("decode item: %w", err)
	}
	it := make(table.Item, len(raw))
	for name, v := range raw {
		if num, ok := v.(json.Number); ok {
			n, err := num.Int64()
			if err != nil {
				return nil, fmt.Errorf("decode attribute %s: %w", name, err)
			}
			it[name] = n
			continue
		}
		it[name] = v
	}
	return it, nil
}

// asInt64 converts any Go integer to int64.
func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case int16:
		return int64(n), true
	case int8:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint8:
		return int64(n), true
	}
	return 0, false
}

// compare orders a and b: ok is false when they are not both strings, both numbers, or (for
// equality only) both bools.
func compare(a, b any) (c int, ok bool) {
	if x, isNum := asInt64(a); isNum {
		y, isNum := asInt64(b)
		if !isNum {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	switch x := a.(type) {
	case string:
		y, isStr := b.(string)
		if !isStr {
			return 0, false
		}
		return bytes.Compare([]byte(x), []byte(y)), true
	case bool:
		y, isBool := b.(bool)
		if !isBool {
			return 0, false
		}
		if x == y {
			return 0, true
		}
		return 1, true // unequal; bools have no order (see eval)
	}
	return 0, false
}
