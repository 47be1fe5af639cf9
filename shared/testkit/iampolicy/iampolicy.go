// Package iampolicy decides whether identity-based IAM policies allow a request, as IAM's policy
// evaluation logic does for one account and no permission boundary: an explicit Deny wins, then
// an Allow, and anything else is denied. Actions match case-insensitively and resources
// case-sensitively, both with the * and ? wildcards; conditions hold when every operator's every
// key matches one of its values.
//
// The condition operators are the string and ARN ones and Bool, alone or qualified with
// ForAllValues: or ForAnyValue: for a multivalued key: the ones the crawler's roles use.
// A statement with another operator never applies, so a policy that needs one fails closed.
package iampolicy

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
)

// Request is one action on one resource, with the condition keys it carries: single-valued in
// Context, multivalued (dynamodb:LeadingKeys) in Values.
type Request struct {
	Action   string
	Resource string
	Context  map[string]string
	Values   map[string][]string
}

// Statement is one statement of a policy document, its lists normalised.
type Statement struct {
	// Policy names the policy the statement is part of; Index is its place there.
	Policy    string
	Index     int
	Sid       string
	Effect    string
	Actions   []string
	Resources []string
	// Conditions maps an operator to keys and their values.
	Conditions map[string]map[string][]string
}

// String shows the statement as a reader finds it in the template.
func (s Statement) String() string {
	id := fmt.Sprintf("%s statement %d", s.Policy, s.Index)
	if s.Sid != "" {
		id += " (" + s.Sid + ")"
	}
	c := ""
	if len(s.Conditions) > 0 {
		b, _ := json.Marshal(s.Conditions)
		c = " if " + string(b)
	}
	return fmt.Sprintf("%s: %s %s on %s%s", id, s.Effect, strings.Join(s.Actions, ","), strings.Join(s.Resources, ","), c)
}

// Policy is every statement of the policies attached to one identity.
type Policy []Statement

// Parse adds the statements of a policy document (the JSON of a template's PolicyDocument, with
// its intrinsic functions already resolved) named name.
func (p Policy) Parse(name string, doc any) (Policy, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	var d struct {
		Statement json.RawMessage
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("policy %s: %w", name, err)
	}
	var stmts []json.RawMessage
	if err := json.Unmarshal(d.Statement, &stmts); err != nil {
		stmts = []json.RawMessage{d.Statement} // a single statement, not a list
	}
	for i, raw := range stmts {
		var s struct {
			Sid       string
			Effect    string
			Action    stringList
			NotAction stringList
			Resource  stringList
			Condition map[string]map[string]stringList
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("policy %s statement %d: %w", name, i, err)
		}
		if len(s.NotAction) > 0 {
			return nil, fmt.Errorf("policy %s statement %d: NotAction is not supported", name, i)
		}
		st := Statement{Policy: name, Index: i, Sid: s.Sid, Effect: s.Effect, Actions: s.Action, Resources: s.Resource}
		if len(s.Condition) > 0 {
			st.Conditions = map[string]map[string][]string{}
			for op, keys := range s.Condition {
				st.Conditions[op] = map[string][]string{}
				for k, v := range keys {
					st.Conditions[op][k] = v
				}
			}
		}
		p = append(p, st)
	}
	return p, nil
}

// stringList reads a JSON string, number, bool or list of them as strings.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var many []any
	if err := json.Unmarshal(b, &many); err != nil {
		var one any
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		many = []any{one}
	}
	for _, v := range many {
		*l = append(*l, fmt.Sprint(v))
	}
	return nil
}

// Decide says whether p allows r, and the statement that decided: a Deny that matches, or else an
// Allow that matches; no statement when nothing matches (an implicit deny).
func (p Policy) Decide(r Request) (bool, *Statement) {
	var allow *Statement
	for i := range p {
		s := &p[i]
		if !s.Applies(r) {
			continue
		}
		if s.Effect == "Deny" {
			return false, s
		}
		if s.Effect == "Allow" && allow == nil {
			allow = s
		}
	}
	return allow != nil, allow
}

// Applies says whether s matches r: one of its actions, one of its resources, and all of its
// conditions.
func (s Statement) Applies(r Request) bool {
	return s.action(r.Action) != "" && s.resource(r.Resource) != "" && s.conditionsHold(r)
}

func (s Statement) action(a string) string {
	for _, p := range s.Actions {
		if Match(strings.ToLower(p), strings.ToLower(a)) {
			return p
		}
	}
	return ""
}

func (s Statement) resource(res string) string {
	for _, p := range s.Resources {
		if Match(p, res) {
			return p
		}
	}
	return ""
}

// conditionsHold says whether every condition of s holds for r. An operator qualified with
// ForAllValues: holds when each of the key's request values matches one of the statement's (and
// when the request has none, as IAM has it: the reason a policy pairs it with a key that every
// request carries); ForAnyValue: when at least one does.
func (s Statement) conditionsHold(r Request) bool {
	for op, keys := range s.Conditions {
		for k, values := range keys {
			have := r.Values[k]
			if v, ok := r.Context[k]; ok {
				have = append([]string{v}, have...)
			}
			if !holds(op, have, values) {
				return false
			}
		}
	}
	return true
}

// holds applies op to the request's values of one key.
func holds(op string, have, values []string) bool {
	if base, ok := strings.CutPrefix(op, "ForAllValues:"); ok {
		for _, v := range have {
			if !condition(base, v, values) {
				return false
			}
		}
		return true
	}
	if base, ok := strings.CutPrefix(op, "ForAnyValue:"); ok {
		for _, v := range have {
			if condition(base, v, values) {
				return true
			}
		}
		return false
	}
	return len(have) == 1 && condition(op, have[0], values)
}

// condition applies one operator to a request's value: true if any of values matches it.
func condition(op, v string, values []string) bool {
	anyOf := func(f func(string) bool) bool {
		for _, w := range values {
			if f(w) {
				return true
			}
		}
		return false
	}
	switch op {
	case "StringEquals", "ArnEquals":
		return anyOf(func(w string) bool { return v == w })
	case "StringEqualsIgnoreCase":
		return anyOf(func(w string) bool { return strings.EqualFold(v, w) })
	case "StringNotEquals":
		return !anyOf(func(w string) bool { return v == w })
	case "StringLike", "ArnLike":
		return anyOf(func(w string) bool { return Match(w, v) })
	case "StringNotLike":
		return !anyOf(func(w string) bool { return Match(w, v) })
	case "Bool":
		return anyOf(func(w string) bool { return strings.EqualFold(v, w) })
	}
	return false // an operator not supported never holds: fail closed
}

// Match reports whether s matches the IAM pattern p, in which * matches any run of characters
// (slashes included) and ? any one character.
func Match(p, s string) bool {
	// path.Match treats / specially and knows character classes: escape what IAM takes literally,
	// and match segment-free by replacing / on both sides.
	const sep = "\x00"
	esc := strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, "/", sep).Replace(p)
	ok, err := path.Match(esc, strings.ReplaceAll(s, "/", sep))
	return err == nil && ok
}

// Grant is one action on one resource pattern that a statement allows.
type Grant struct {
	Statement *Statement
	Action    string
	Resource  string
}

func (g Grant) String() string {
	return fmt.Sprintf("%s on %s (%s statement %d)", g.Action, g.Resource, g.Statement.Policy, g.Statement.Index)
}

// Unused returns the grants of p's Allow statements that no request of rs used: each action and
// resource pattern of a statement that no request allowed by that statement matched.
func (p Policy) Unused(rs []Request) []Grant {
	used := map[string]bool{}
	key := func(i int, a, r string) string { return fmt.Sprint(i, "\x00", a, "\x00", r) }
	for _, r := range rs {
		for i, s := range p {
			if s.Effect == "Allow" && s.Applies(r) {
				used[key(i, s.action(r.Action), s.resource(r.Resource))] = true
			}
		}
	}
	var out []Grant
	for i := range p {
		s := &p[i]
		if s.Effect != "Allow" {
			continue
		}
		for _, a := range s.Actions {
			for _, res := range s.Resources {
				if !used[key(i, a, res)] {
					out = append(out, Grant{Statement: s, Action: a, Resource: res})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Action < out[j].Action })
	return out
}
