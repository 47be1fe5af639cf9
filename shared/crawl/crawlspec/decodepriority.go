package crawlspec

import (
	"gopkg.in/yaml.v3"

	"github.com/crawlstack/crawlstack/shared/crawl/priority"
)

// priority reads the priority section: a list of rules, each with its conditions (pattern, from,
// max_depth) and the priority it gives. A rule that cannot work is an error at its line.
func (d *decoder) priority(n *yaml.Node) []priority.Rule {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, "priority", "want a list of rules such as {pattern: /product/, priority: high}, got %s", kindOf(n))
		return nil
	}
	if len(n.Content) > priority.MaxRules {
		d.fail(n, "priority", "%d rules, over the limit of %d", len(n.Content), priority.MaxRules)
		return nil
	}
	var out []priority.Rule
	for _, e := range n.Content {
		var r priority.Rule
		before := len(d.errs)
		d.mapping(e, "priority", map[string]func(k, v *yaml.Node){
			"pattern":   func(k, v *yaml.Node) { r.Pattern, _ = d.str(v, "priority.pattern") },
			"from":      func(k, v *yaml.Node) { r.From, _ = d.str(v, "priority.from") },
			"max_depth": func(k, v *yaml.Node) { r.MaxDepth, _ = d.integer(v, "priority.max_depth", 0) },
			"priority":  func(k, v *yaml.Node) { r.Priority, _ = d.str(v, "priority.priority") },
		})
		if len(d.errs) > before {
			continue
		}
		if err := r.Check(); err != nil {
			d.fail(e, "priority", "%v", err)
			continue
		}
		out = append(out, r)
	}
	return out
}
