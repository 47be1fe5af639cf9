package crawlspec

import (
	"errors"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/crawlstack/crawlstack/shared/crawl/web/extract"
)

// The extraction settings of a spec: the extract section's fields and the items section's rules,
// each an error at the line of the setting at fault.

// items reads the items section: a mapping of rule names to a selector (css, xpath or json) and the
// fields of each item, in file order. A rule that cannot work is an error at its line, or at the
// line of the setting at fault.
func (d *decoder) items(n *yaml.Node) []extract.Rule {
	var out []extract.Rule
	if n.Kind == yaml.MappingNode && len(n.Content)/2 > extract.MaxRules {
		d.fail(n, "items", "%d item rules, over the limit of %d", len(n.Content)/2, extract.MaxRules)
		return nil
	}
	d.mappingAny(n, "items", func(k, v *yaml.Node) {
		r := extract.Rule{Name: k.Value}
		key := join("items", k.Value)
		before := len(d.errs)
		d.mapping(v, key, map[string]func(k, v *yaml.Node){
			"css":    func(kk, vv *yaml.Node) { r.CSS, _ = d.str(vv, join(key, "css")) },
			"xpath":  func(kk, vv *yaml.Node) { r.XPath, _ = d.str(vv, join(key, "xpath")) },
			"json":   func(kk, vv *yaml.Node) { r.JSON, _ = d.str(vv, join(key, "json")) },
			"fields": func(kk, vv *yaml.Node) { r.Fields = d.fields(vv, join(key, "fields")) },
		})
		if len(d.errs) > before {
			return
		}
		if err := r.Check(); err != nil {
			var ke *extract.KeyError
			at := v
			if errors.As(err, &ke) && ke.Key != "" {
				d.fail(nodeAt(v, ke.Key), join(key, ke.Key), "%v", ke.Err)
			} else {
				d.fail(at, key, "%v", err)
			}
			return
		}
		out = append(out, r)
	})
	return out
}

// nodeAt is the value under n at the dotted path of mapping keys (fields.price.css), or the
// deepest node of it that is there.
func nodeAt(n *yaml.Node, path string) *yaml.Node {
	for _, k := range strings.Split(path, ".") {
		next := (*yaml.Node)(nil)
		for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return n
		}
		n = next
	}
	return n
}

// fields reads a mapping of field names to their definitions under key (the extract section, or
// an item rule's fields), in file order. A definition that cannot work is an error at the line of
// the setting at fault.
func (d *decoder) fields(n *yaml.Node, under string) []extract.Field {
	var out []extract.Field
	if n.Kind == yaml.MappingNode && len(n.Content)/2 > extract.MaxFields {
		d.fail(n, under, "%d fields, over the limit of %d", len(n.Content)/2, extract.MaxFields)
		return nil
	}
	d.mappingAny(n, under, func(k, v *yaml.Node) {
		f := extract.Field{Name: k.Value}
		key := join(under, k.Value)
		lines := map[string]*yaml.Node{"name": k}
		str := func(dst *string) func(k, v *yaml.Node) {
			return func(kk, vv *yaml.Node) {
				lines[kk.Value] = vv
				*dst, _ = d.str(vv, join(key, kk.Value))
			}
		}
		before := len(d.errs)
		d.mapping(v, key, map[string]func(k, v *yaml.Node){
			"css":       str(&f.CSS),
			"xpath":     str(&f.XPath),
			"json":      str(&f.JSON),
			"attr":      str(&f.Attr),
			"regexp":    str(&f.Regexp),
			"jsonld":    str(&f.JSONLD),
			"meta":      str(&f.Meta),
			"extractor": str(&f.Extractor),
			"all": func(kk, vv *yaml.Node) {
				lines["all"] = vv
				f.All, _ = d.boolean(vv, join(key, "all"))
			},
			"url": func(kk, vv *yaml.Node) {
				lines["url"] = vv
				f.URL, _ = d.boolean(vv, join(key, "url"))
			},
			"opengraph": func(kk, vv *yaml.Node) {
				lines["opengraph"] = vv
				f.OpenGraph, _ = d.boolean(vv, join(key, "opengraph"))
			},
			"visible_text": func(kk, vv *yaml.Node) {
				lines["visible_text"] = vv
				f.VisibleText, _ = d.boolean(vv, join(key, "visible_text"))
			},
		})
		if len(d.errs) > before {
			return
		}
		var ke *extract.KeyError
		if err := f.Check(); errors.As(err, &ke) {
			at := lines[ke.Key]
			if at == nil {
				at = v // the field as a whole (no source, or two)
			}
			d.fail(at, join(key, ke.Key), "%v", ke.Err)
			return
		}
		out = append(out, f)
	})
	return out
}
