package crawlspec

import (
	"mime"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/crawlstack/crawlstack/shared/crawl/web/doctype"
)

// MaxKeep bounds the media types a spec keeps.
const MaxKeep = 20

// keep reads the keep section: a list of media types, each "type/subtype" or "type/*", in lower
// case and without parameters.
func (d *decoder) keep(n *yaml.Node) []string {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, "keep", "want a list of media types such as [application/pdf, \"image/*\"], got %s", kindOf(n))
		return nil
	}
	if len(n.Content) > MaxKeep {
		d.fail(n, "keep", "%d media types, over the limit of %d", len(n.Content), MaxKeep)
		return nil
	}
	var out []string
	for _, e := range n.Content {
		t, ok := d.str(e, "keep")
		if !ok {
			continue
		}
		mt, params, err := mime.ParseMediaType(t)
		typ, sub, _ := strings.Cut(mt, "/")
		switch {
		case err != nil || len(params) > 0 || mt != t || typ == "*" || sub == "":
			d.fail(e, "keep", "%q: want a media type in lower case, such as application/pdf or image/*", t)
		default:
			out = append(out, mt)
		}
	}
	return out
}

// Keeps reports whether the media type mt is one of keep's: the type itself, its "type/*", or
// for "type/*+suffix" (the media types of a parsed kind, doctype.MediaTypes) a type of that suffix.
func Keeps(keep []string, mt string) bool { return doctype.Matches(keep, mt) }

// parseKinds reads the parse section: a list of the kinds parsed besides HTML (pdf, json, text).
func (d *decoder) parseKinds(n *yaml.Node) []doctype.Kind {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.fail(n, "parse", "want a list of kinds such as [pdf, json, text], got %s", kindOf(n))
		return nil
	}
	var out []doctype.Kind
	for _, e := range n.Content {
		name, ok := d.str(e, "parse")
		if !ok {
			continue
		}
		k, err := doctype.Parse(name)
		switch {
		case err != nil:
			d.fail(e, "parse", "%v", err)
		case slices.Contains(out, k):
			d.fail(e, "parse", "%q: listed twice", name)
		default:
			out = append(out, k)
		}
	}
	return out
}
