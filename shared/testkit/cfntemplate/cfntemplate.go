// Package cfntemplate reads a synthesized CloudFormation template (cdk synth's
// <stack>.template.json) and resolves its intrinsic functions against the physical resources of
// a deployment, so that a local harness can give each function the environment, the event
// source mappings and the role policies that the template gives it on AWS.
//
// Only what the crawler's template uses is resolved: Ref, Fn::GetAtt (Arn, QueueUrl and the
// like, as the deployment names them), Fn::Join, Fn::Sub, and the pseudo parameters
// AWS::Partition, AWS::Region, AWS::AccountId and AWS::URLSuffix. Anything else is an error.
package cfntemplate

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Template is a parsed template.
type Template struct {
	Resources map[string]Resource
}

// Resource is one resource of the template, its properties still unresolved.
type Resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any
}

// Load reads the template at path.
func Load(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read template: %w", err)
	}
	var t Template
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("parse template %s: %w", path, err)
	}
	return &t, nil
}

// OfType returns the logical ids of the resources of type typ, sorted.
func (t *Template) OfType(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// CDKPath is the construct path CDK records in a resource's metadata (aws:cdk:path), such as
// "Crawlstack/FetchFunction/Resource"; empty when there is none.
func (r Resource) CDKPath() string {
	p, _ := r.Metadata["aws:cdk:path"].(string)
	return p
}

// Physical is a deployment's side of the template: what each resource's Ref and attributes
// resolve to, and the pseudo parameters.
type Physical struct {
	Region, Account string
	// Refs maps a logical id to what Ref returns for it.
	Refs map[string]string
	// Attrs maps a logical id and an attribute name to its value.
	Attrs map[string]map[string]string
}

// Resolve returns v with every intrinsic function replaced by its value in p.
func (p Physical) Resolve(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for fn, arg := range x {
				if fn == "Ref" || strings.HasPrefix(fn, "Fn::") {
					return p.intrinsic(fn, arg)
				}
			}
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := p.Resolve(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := p.Resolve(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// ResolveString resolves v and requires a string.
func (p Physical) ResolveString(v any) (string, error) {
	r, err := p.Resolve(v)
	if err != nil {
		return "", err
	}
	switch s := r.(type) {
	case string:
		return s, nil
	case float64, bool:
		return fmt.Sprint(s), nil
	}
	return "", fmt.Errorf("not a string: %v", r)
}

func (p Physical) intrinsic(fn string, arg any) (any, error) {
	switch fn {
	case "Ref":
		name, _ := arg.(string)
		return p.ref(name)
	case "Fn::GetAtt":
		parts, ok := arg.([]any)
		if !ok || len(parts) != 2 {
			return nil, fmt.Errorf("Fn::GetAtt %v: want [id, attribute]", arg)
		}
		id, _ := parts[0].(string)
		attr, _ := parts[1].(string)
		return p.attr(id, attr)
	case "Fn::Join":
		parts, ok := arg.([]any)
		if !ok || len(parts) != 2 {
			return nil, fmt.Errorf("Fn::Join %v: want [separator, list]", arg)
		}
		sep, _ := parts[0].(string)
		list, err := p.Resolve(parts[1])
		if err != nil {
			return nil, fmt.Errorf("Fn::Join: %w", err)
		}
		items, ok := list.([]any)
		if !ok {
			return nil, fmt.Errorf("Fn::Join: %v is not a list", list)
		}
		strs := make([]string, len(items))
		for i, it := range items {
			s, ok := it.(string)
			if !ok {
				return nil, fmt.Errorf("Fn::Join: item %v is not a string", it)
			}
			strs[i] = s
		}
		return strings.Join(strs, sep), nil
	case "Fn::Sub":
		s, ok := arg.(string)
		if !ok {
			return nil, fmt.Errorf("Fn::Sub %v: only the string form is supported", arg)
		}
		return p.sub(s)
	}
	return nil, fmt.Errorf("intrinsic function %s is not supported", fn)
}

func (p Physical) ref(name string) (string, error) {
	switch name {
	case "AWS::Partition":
		return "aws", nil
	case "AWS::Region":
		return p.Region, nil
	case "AWS::AccountId":
		return p.Account, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	}
	v, ok := p.Refs[name]
	if !ok {
		return "", fmt.Errorf("Ref %s: the deployment has no such resource", name)
	}
	return v, nil
}

func (p Physical) attr(id, attr string) (string, error) {
	v, ok := p.Attrs[id][attr]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s.%s: the deployment has no such attribute", id, attr)
	}
	return v, nil
}

var subVar = regexp.MustCompile(`\$\{([^}]+)\}`)

func (p Physical) sub(s string) (string, error) {
	var errs []error
	out := subVar.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		var v string
		var err error
		if id, attr, ok := strings.Cut(name, "."); ok {
			v, err = p.attr(id, attr)
		} else {
			v, err = p.ref(name)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return v
	})
	if len(errs) > 0 {
		return "", fmt.Errorf("Fn::Sub %q: %w", s, errs[0])
	}
	return out, nil
}
