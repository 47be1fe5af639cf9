package sqlite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/crawlstack/crawlstack/shared/table"
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
// bools) are read by a direct scan once encoding/json has validated the
// document; anything else takes encoding/json's generic path.
func decodeItem(doc string) (table.Item, error) {
	if json.Valid([]byte(doc)) {
		if it, ok := scanFlatItem(doc); ok {
			return it, nil
		}
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

// scanFlatItem reads a valid JSON object whose values are all strings, integers or bools. ok is false for anything else, and the caller decodes it generically.
func scanFlatItem(doc string) (it table.Item, ok bool) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, false
	}
	it = make(table.Item, 8)
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return it, true
	}
	for i < len(doc) {
		name, next, ok := jsonString(doc, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(doc, next)
		if i >= len(doc) || doc[i] != ':' {
			return nil, false
		}
		i = skipSpace(doc, i+1)
		if i >= len(doc) {
			return nil, false
		}
		switch c := doc[i]; {
		case c == '"':
			v, next, ok := jsonString(doc, i)
			if !ok {
				return nil, false
			}
			it[name], i = v, next
		case strings.HasPrefix(doc[i:], "true"):
			it[name], i = true, i+4
		case strings.HasPrefix(doc[i:], "false"):
			it[name], i = false, i+5
		case c == '-' || c >= '0' && c <= '9':
			end := i + 1
			for end < len(doc) && doc[end] >= '0' && doc[end] <= '9' {
				end++
			}
			n, err := strconv.ParseInt(doc[i:end], 10, 64)
			if err != nil {
				return nil, false // a fraction, an exponent or out of range
			}
			it[name], i = n, end
		default:
			return nil, false
		}
		i = skipSpace(doc, i)
		if i >= len(doc) {
			return nil, false
		}
		switch doc[i] {
		case '}':
			return it, true
		case ',':
			i = skipSpace(doc, i+1)
		default:
			return nil, false // such as the '.' of a fraction
		}
	}
	return nil, false
}

// jsonString reads the string that starts at doc[i] ('"') of a document encoding/json has
// validated. A string with escapes is unquoted as encoding/json would (unquote); ok is false for
// anything that is not a string.
func jsonString(doc string, i int) (s string, next int, ok bool) {
	if i >= len(doc) || doc[i] != '"' {
		return "", 0, false
	}
	end := strings.IndexAny(doc[i+1:], "\\\"")
	if end < 0 {
		return "", 0, false
	}
	if j := i + 1 + end; doc[j] == '"' {
		if !utf8.ValidString(doc[i+1 : j]) {
			return "", 0, false // encoding/json replaces invalid UTF-8: let it
		}
		return doc[i+1 : j], j + 1, true
	}
	for j := i + 1 + end; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++ // the escaped byte
		case '"':
			s, ok := unquote(doc[i : j+1])
			return s, j + 1, ok
		}
	}
	return "", 0, false
}

// unquote unescapes a string literal of a document encoding/json has validated, as encoding/json
// would. strconv.Unquote reads JSON's escapes alike, but for the two it refuses: `\/`, and a \u
// escape of half a surrogate pair (which encoding/json joins with the next, or replaces with
// U+FFFD); those, and invalid UTF-8 (which encoding/json replaces), go to encoding/json.
func unquote(lit string) (string, bool) {
	if utf8.ValidString(lit) {
		if s, err := strconv.Unquote(lit); err == nil {
			return s, true
		}
	}
	var s string
	err := json.Unmarshal([]byte(lit), &s)
	return s, err == nil
}

func skipSpace(doc string, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
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
