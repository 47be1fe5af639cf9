package sqlite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/crawlstack/crawlstack/shared/crawl/flatjson"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// encodeItem stores an item as a JSON object. Only strings, integers and bools are allowed, as
// the table port says.
func encodeItem(it table.Item) (string, error) {
	clean := maps.Clone(it)
	if err := normalize(clean); err != nil {
		return "", err
	}
	return marshalItem(clean)
}

// normalize checks the attributes of it and makes every integer an int64, in place.
func normalize(it table.Item) error {
	for name, v := range it {
		if name == "" {
			return fmt.Errorf("an attribute name is empty")
		}
		switch v.(type) {
		case string, bool, int64:
		default:
			n, ok := asInt64(v)
			if !ok {
				return fmt.Errorf("attribute %s: unsupported type %T (want string, int64 or bool)", name, v)
			}
			it[name] = n
		}
	}
	return nil
}

// marshalItem encodes a normalized item.
func marshalItem(it table.Item) (string, error) {
	b, err := json.Marshal(it)
	if err != nil {
		return "", fmt.Errorf("encode item: %w", err)
	}
	return string(b), nil
}

// storedAsIs reports whether a normalized item reads back exactly as it is: JSON replaces the
// invalid UTF-8 of a string.
func storedAsIs(it table.Item) bool {
	for _, v := range it {
		if s, ok := v.(string); ok && !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// decodeItem reads an item stored by encodeItem; numbers come back as int64.
//
// It runs on every read of the table, so the flat objects encodeItem writes (strings, integers,
// bools) are read by flatjson in one pass; anything else takes encoding/json's generic path.
func decodeItem(doc string) (table.Item, error) {
	if it, ok := flatjson.Object(doc); ok {
		return it, nil
	}
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
