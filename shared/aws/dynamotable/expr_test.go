package dynamotable

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// The expected expressions below are written by hand in the syntax the SDK's expression package
// emits: "attribute_exists (#0)", "#0 < :0", "(a) AND (b)", "NOT (a)", and one line per update
// clause, "ADD #0 :0\nREMOVE #1\nSET #2 = :1\n", clauses in that order. resolve swaps each
// placeholder for what it stands for, so the tests pin operator, name, value and value type
// without depending on how the SDK numbers its placeholders:
//
//	#0 naming "leaseUntil"    -> #leaseUntil
//	#0 #1 naming "a" and "b"  -> #a.#b (a path), while one name "a.b" -> #a.b
//	:0 holding S "5"          -> :"5"
//	:0 holding N "5"          -> :5
//	:0 holding BOOL true      -> :true

// exprToken is one token of an expression: a placeholder, a word, an operator or punctuation.
var exprToken = regexp.MustCompile(`^(?:#[0-9]+|:[0-9]+|[A-Za-z_]+|<>|<=|>=|[=<>(),]|\s+)`)

var exprWord = regexp.MustCompile(`^[A-Za-z_]+$`)

// syntaxWords are the only bare words an expression may hold; any other word would be an
// attribute name or a value written inline instead of through a placeholder.
var syntaxWords = map[string]bool{
	"attribute_exists": true, "attribute_not_exists": true, "begins_with": true,
	"AND": true, "OR": true, "NOT": true,
	"SET": true, "ADD": true, "REMOVE": true,
}

// resolve returns each text (nil gives "") with its placeholders replaced by #name and :value.
// It fails the test on a bare word that is not syntax, on a placeholder with no entry, on an
// entry that no text uses (DynamoDB rejects unused names and values), and on a value that is not
// a string, number or boolean.
func resolve(t *testing.T, names map[string]string, values map[string]types.AttributeValue, texts ...*string) []string {
	t.Helper()
	used := map[string]bool{}
	out := make([]string, len(texts))
	for i, p := range texts {
		if p == nil {
			continue
		}
		var b strings.Builder
		for rest := *p; rest != ""; {
			loc := exprToken.FindStringIndex(rest)
			if loc == nil {
				t.Fatalf("unexpected text %q in expression %q", rest, *p)
			}
			tok := rest[:loc[1]]
			rest = rest[loc[1]:]
			switch {
			case tok[0] == '#':
				n, ok := names[tok]
				if !ok {
					t.Fatalf("name placeholder %s in %q has no entry in %v", tok, *p, names)
				}
				used[tok] = true
				b.WriteString("#" + n)
			case tok[0] == ':':
				v, ok := values[tok]
				if !ok {
					t.Fatalf("value placeholder %s in %q has no entry", tok, *p)
				}
				used[tok] = true
				b.WriteString(":" + valueText(t, v))
			case exprWord.MatchString(tok) && !syntaxWords[tok]:
				t.Fatalf("bare word %q in expression %q: every name and value must be a placeholder", tok, *p)
			default:
				b.WriteString(tok)
			}
		}
		out[i] = b.String()
	}
	for k, n := range names {
		if !used[k] {
			t.Errorf("name %s (%q) is not used by any expression", k, n)
		}
	}
	for k, v := range values {
		if !used[k] {
			t.Errorf("value %s (%s) is not used by any expression", k, valueText(t, v))
		}
	}
	return out
}

// valueText writes a string quoted, a number bare and a boolean as true or false.
func valueText(t *testing.T, v types.AttributeValue) string {
	t.Helper()
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return strconv.Quote(v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		return strconv.FormatBool(v.Value)
	}
	t.Fatalf("value %#v is not a string, number or boolean", v)
	return ""
}

func TestConditionExpression(t *testing.T) {
	tests := []struct {
		name string
		cond table.Cond
		want string
	}{
		{"ItemExists", table.ItemExists(), "attribute_exists (#pk)"},
		{"ItemNotExists", table.ItemNotExists(), "attribute_not_exists (#pk)"},
		{"Exists", table.Exists("status"), "attribute_exists (#status)"},
		{"NotExists", table.NotExists("leaseUntil"), "attribute_not_exists (#leaseUntil)"},

		{"Eq/string", table.Eq("status", "done"), `#status = :"done"`},
		{"Eq/emptyString", table.Eq("status", ""), `#status = :""`},
		{"Eq/numericString", table.Eq("depth", "3"), `#depth = :"3"`},
		{"Eq/int64", table.Eq("depth", int64(3)), "#depth = :3"},
		{"Eq/int", table.Eq("depth", 3), "#depth = :3"},
		{"Eq/true", table.Eq("ok", true), "#ok = :true"},
		{"Eq/false", table.Eq("ok", false), "#ok = :false"},
		// Ne holds for a missing attribute by the port's definition, so it says so.
		{"Ne/string", table.Ne("owner", "w1"), `(attribute_not_exists (#owner)) OR (#owner <> :"w1")`},
		{"Ne/int64", table.Ne("depth", int64(0)), "(attribute_not_exists (#depth)) OR (#depth <> :0)"},
		{"Lt/int64", table.Lt("leaseUntil", int64(200)), "#leaseUntil < :200"},
		{"Lt/string", table.Lt("status", "e"), `#status < :"e"`},
		{"Lt/negative", table.Lt("depth", int64(-1)), "#depth < :-1"},
		{"Le/int64", table.Le("depth", int64(3)), "#depth <= :3"},
		{"Le/string", table.Le("status", "done"), `#status <= :"done"`},
		{"Gt/int64", table.Gt("depth", int64(2)), "#depth > :2"},
		{"Gt/maxInt64", table.Gt("leaseUntil", int64(math.MaxInt64)), "#leaseUntil > :9223372036854775807"},
		{"Ge/int64", table.Ge("depth", int64(3)), "#depth >= :3"},
		{"Ge/minInt64", table.Ge("depth", int64(math.MinInt64)), "#depth >= :-9223372036854775808"},

		{"And/two", table.And(table.Exists("status"), table.Eq("depth", int64(3))),
			"(attribute_exists (#status)) AND (#depth = :3)"},
		{"And/three", table.And(table.ItemExists(), table.Eq("owner", "w1"), table.Gt("leaseUntil", int64(5))),
			`(attribute_exists (#pk)) AND (#owner = :"w1") AND (#leaseUntil > :5)`},
		{"And/one", table.And(table.Exists("status")), "attribute_exists (#status)"},
		{"Or/two", table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(200))),
			"(attribute_not_exists (#leaseUntil)) OR (#leaseUntil < :200)"},
		{"Or/three", table.Or(table.ItemNotExists(), table.Eq("status", "queued"), table.Eq("status", "failed")),
			`(attribute_not_exists (#pk)) OR (#status = :"queued") OR (#status = :"failed")`},
		{"Or/one", table.Or(table.Lt("depth", int64(1))), "#depth < :1"},
		{"Not/exists", table.Not(table.Exists("lease")), "NOT (attribute_exists (#lease))"},
		{"Not/itemExists", table.Not(table.ItemExists()), "NOT (attribute_exists (#pk))"},
		{"Not/not", table.Not(table.Not(table.Eq("ok", true))), "NOT (NOT (#ok = :true))"},
		{"Nested", table.And(
			table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(200))),
			table.Not(table.Eq("status", "done"))),
			`((attribute_not_exists (#leaseUntil)) OR (#leaseUntil < :200)) AND (NOT (#status = :"done"))`},
		{"SameNameTwice", table.And(table.Ge("n", int64(1)), table.Le("n", int64(5))), "(#n >= :1) AND (#n <= :5)"},
		{"SameValueTwice", table.Or(table.Eq("a", "x"), table.Eq("b", "x")), `(#a = :"x") OR (#b = :"x")`},
		{"DottedName", table.Eq("a.b", "x"), `#a.b = :"x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr, err := buildExpression(tt.cond, nil)
			if err != nil {
				t.Fatalf("buildExpression(%+v): %v", tt.cond, err)
			}
			if expr.Update() != nil || expr.Filter() != nil {
				t.Errorf("update = %v, filter = %v, want neither", expr.Update(), expr.Filter())
			}
			got := resolve(t, expr.Names(), expr.Values(), expr.Condition())[0]
			if got != tt.want {
				t.Errorf("condition = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUpdateExpression(t *testing.T) {
	tests := []struct {
		name string
		u    table.Update
		want string
	}{
		{"Set/string", table.Update{Set: map[string]any{"status": "fetched"}}, "SET #status = :\"fetched\"\n"},
		{"Set/numericString", table.Update{Set: map[string]any{"depth": "2"}}, "SET #depth = :\"2\"\n"},
		{"Set/int64", table.Update{Set: map[string]any{"leaseUntil": int64(160)}}, "SET #leaseUntil = :160\n"},
		{"Set/int", table.Update{Set: map[string]any{"depth": -2}}, "SET #depth = :-2\n"},
		{"Set/bool", table.Update{Set: map[string]any{"ok": false}}, "SET #ok = :false\n"},
		{"Set/sorted", table.Update{Set: map[string]any{"url": "u", "depth": int64(2), "ok": true}},
			"SET #depth = :2, #ok = :true, #url = :\"u\"\n"},
		{"Add/one", table.Update{Add: map[string]int64{"count": 1}}, "ADD #count :1\n"},
		{"Add/negative", table.Update{Add: map[string]int64{"count": -7}}, "ADD #count :-7\n"},
		{"Add/sorted", table.Update{Add: map[string]int64{"n": 1, "m": 10}}, "ADD #m :10, #n :1\n"},
		{"Remove/one", table.Update{Remove: []string{"leaseUntil"}}, "REMOVE #leaseUntil\n"},
		{"Remove/inOrder", table.Update{Remove: []string{"owner", "leaseUntil"}}, "REMOVE #owner, #leaseUntil\n"},
		{"All", table.Update{Set: map[string]any{"a": "2"}, Add: map[string]int64{"n": 1, "m": 10}, Remove: []string{"gone"}},
			"ADD #m :10, #n :1\nREMOVE #gone\nSET #a = :\"2\"\n"},
		{"DottedName", table.Update{Set: map[string]any{"a.b": "x"}}, "SET #a.b = :\"x\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr, err := buildExpression(table.Cond{}, &tt.u)
			if err != nil {
				t.Fatalf("buildExpression(%+v): %v", tt.u, err)
			}
			if expr.Condition() != nil || expr.Filter() != nil {
				t.Errorf("condition = %v, filter = %v, want neither", expr.Condition(), expr.Filter())
			}
			got := resolve(t, expr.Names(), expr.Values(), expr.Update())[0]
			if got != tt.want {
				t.Errorf("update = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestConditionWithUpdate checks that one expression carries both parts, sharing one set of
// names and values, and that an empty update leaves only the condition.
func TestConditionWithUpdate(t *testing.T) {
	tests := []struct {
		name       string
		cond       table.Cond
		u          table.Update
		wantCond   string
		wantUpdate string
	}{
		{"Claim",
			table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(100))),
			table.Update{Set: map[string]any{"owner": "w1", "leaseUntil": int64(160)}, Add: map[string]int64{"attempts": 1}},
			"(attribute_not_exists (#leaseUntil)) OR (#leaseUntil < :100)",
			"ADD #attempts :1\nSET #leaseUntil = :160, #owner = :\"w1\"\n"},
		{"CreateOnly",
			table.ItemNotExists(),
			table.Update{Set: map[string]any{"status": "queued"}},
			"attribute_not_exists (#pk)",
			"SET #status = :\"queued\"\n"},
		{"Release",
			table.Eq("owner", "w1"),
			table.Update{Remove: []string{"owner", "leaseUntil"}},
			`#owner = :"w1"`,
			"REMOVE #owner, #leaseUntil\n"},
		{"EmptyUpdate", table.ItemExists(), table.Update{}, "attribute_exists (#pk)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr, err := buildExpression(tt.cond, &tt.u)
			if err != nil {
				t.Fatalf("buildExpression: %v", err)
			}
			got := resolve(t, expr.Names(), expr.Values(), expr.Condition(), expr.Update())
			if got[0] != tt.wantCond {
				t.Errorf("condition = %q, want %q", got[0], tt.wantCond)
			}
			if got[1] != tt.wantUpdate {
				t.Errorf("update = %q, want %q", got[1], tt.wantUpdate)
			}
		})
	}
}

func TestKeyCondition(t *testing.T) {
	tests := []struct {
		part, prefix string
		want         string
	}{
		{"c#x#3", "u#", `(#pk = :"c#x#3") AND (begins_with (#sk, :"u#"))`},
		{"p#7", "", `#pk = :"p#7"`},
	}
	for _, tt := range tests {
		t.Run(tt.part+"|"+tt.prefix, func(t *testing.T) {
			expr, err := keyCondition(tt.part, tt.prefix)
			if err != nil {
				t.Fatalf("keyCondition: %v", err)
			}
			if expr.Condition() != nil || expr.Filter() != nil {
				t.Errorf("condition = %v, filter = %v, want neither", expr.Condition(), expr.Filter())
			}
			got := resolve(t, expr.Names(), expr.Values(), expr.KeyCondition())[0]
			if got != tt.want {
				t.Errorf("key condition = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExpressionErrors(t *testing.T) {
	tests := []struct {
		name    string
		cond    table.Cond
		u       *table.Update
		wantIs  error  // nil: no sentinel
		wantMsg string // the error's text contains it
	}{
		{"And/empty", table.And(), nil, nil, "condition and: no sub-conditions"},
		{"Or/empty", table.Or(), nil, nil, "condition or: no sub-conditions"},
		{"Not/none", table.Cond{Op: table.OpNot}, nil, nil, "condition not: 0 sub-conditions, want 1"},
		{"Not/two", table.Cond{Op: table.OpNot, Sub: []table.Cond{table.Exists("a"), table.Exists("b")}}, nil, nil,
			"condition not: 2 sub-conditions, want 1"},
		{"UnknownOp", table.Cond{Op: "like", Name: "a", Value: "x"}, nil, nil, `condition: unknown operator "like"`},
		{"ZeroInsideAnd", table.And(table.Exists("a"), table.Cond{}), nil, nil, `condition: unknown operator ""`},
		{"BadInsideNot", table.Not(table.Or(table.Exists("a"), table.Or())), nil, nil, "condition or: no sub-conditions"},
		{"BadInsideOr", table.Or(table.Exists("a"), table.Lt("x", 1.5)), nil, nil,
			"condition lt x: unsupported value type float64"},
		{"Eq/float", table.Eq("x", 1.5), nil, nil, "condition eq x: unsupported value type float64"},
		{"Ne/nil", table.Ne("x", nil), nil, nil, "condition ne x: unsupported value type <nil>"},
		{"Ge/uint", table.Ge("x", uint(1)), nil, nil, "condition ge x: unsupported value type uint"},
		{"Le/bytes", table.Le("x", []byte("a")), nil, nil, "condition le x: unsupported value type []uint8"},
		{"Gt/int32", table.Gt("x", int32(1)), nil, nil, "condition gt x: unsupported value type int32"},
		{"Exists/emptyName", table.Exists(""), nil, errEmptyName, "condition attr_exists: empty attribute name"},
		{"NotExists/emptyName", table.NotExists(""), nil, errEmptyName, "condition attr_not_exists: empty attribute name"},
		{"Eq/emptyName", table.Eq("", "x"), nil, errEmptyName, "condition eq: empty attribute name"},
		{"Set/key", table.Cond{}, &table.Update{Set: map[string]any{"pk": "x"}}, errKeyUpdate, "key attributes pk and sk"},
		{"Add/key", table.Cond{}, &table.Update{Add: map[string]int64{"pk": 1}}, errKeyUpdate, "key attributes pk and sk"},
		{"Remove/key", table.Cond{}, &table.Update{Remove: []string{"a", "pk"}}, errKeyUpdate, "key attributes pk and sk"},
		{"Set/sortKey", table.Cond{}, &table.Update{Set: map[string]any{"sk": "x"}}, errKeyUpdate, "key attributes pk and sk"},
		{"Set/float", table.Cond{}, &table.Update{Set: map[string]any{"x": 2.5}}, nil,
			"update set x: unsupported value type float64"},
		{"Set/nil", table.Cond{}, &table.Update{Set: map[string]any{"x": nil}}, nil,
			"update set x: unsupported value type <nil>"},
		{"Set/emptyName", table.Cond{}, &table.Update{Set: map[string]any{"": "x"}}, errEmptyName,
			"update set: empty attribute name"},
		{"Add/emptyName", table.Cond{}, &table.Update{Add: map[string]int64{"": 1}}, errEmptyName,
			"update add: empty attribute name"},
		{"Remove/emptyName", table.Cond{}, &table.Update{Remove: []string{""}}, errEmptyName,
			"update remove: empty attribute name"},
		{"BadUpdateGoodCond", table.ItemExists(), &table.Update{Set: map[string]any{"x": 2.5}}, nil,
			"update set x: unsupported value type float64"},
		{"BadCondGoodUpdate", table.And(), &table.Update{Set: map[string]any{"x": "y"}}, nil,
			"condition and: no sub-conditions"},
		// The callers build an expression only when there is something to say.
		{"Nothing", table.Cond{}, &table.Update{}, nil, "build expression: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr, err := buildExpression(tt.cond, tt.u)
			if err == nil {
				t.Fatalf("buildExpression succeeded with condition %v and update %v, want an error containing %q",
					expr.Condition(), expr.Update(), tt.wantMsg)
			}
			if got := err.Error(); !strings.Contains(got, tt.wantMsg) {
				t.Errorf("error = %q, want it to contain %q", got, tt.wantMsg)
			}
			if got := err.Error(); strings.ToLower(got[:1]) != got[:1] {
				t.Errorf("error %q does not start in lower case", got)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error = %v, want errors.Is %v", err, tt.wantIs)
			}
		})
	}
}
