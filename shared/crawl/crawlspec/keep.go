package crawlspec

import (
	"mime"
	"strings"

	"gopkg.in/yaml.v3"
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

// Keeps reports whether the media type mt is one of keep's: the type itself, or its "type/*".
func Keeps(keep []string, mt string) bool {
	typ, _, _ := strings.Cut(mt, "/")
	for _, k := range keep {
		if k == mt || k == typ+"/*" {
			return true
		}
	}
	return false
}
