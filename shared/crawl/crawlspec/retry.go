package crawlspec

import (
	"time"

	"gopkg.in/yaml.v3"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
)

// retrySection reads the spec's retry section: a default curve and one per error class, each
// {tries: N, wait: DURATION} (docs/spec.md), every tries within the stack's (Bounds.MaxTries).
//
//	retry:
//	  default: {tries: 3, wait: 30s}
//	  classes:
//	    timeout: {tries: 1}
//	    http_5xx: {tries: 5, wait: 10s}
func (d *decoder) retrySection(n *yaml.Node) *retry.Table {
	t := &retry.Table{}
	d.mapping(n, "retry", map[string]func(k, v *yaml.Node){
		"default": func(k, v *yaml.Node) { t.Default = d.curve(v, "retry.default") },
		"classes": func(k, v *yaml.Node) {
			d.mappingAny(v, "retry.classes", func(ck, cv *yaml.Node) {
				key := join("retry.classes", ck.Value)
				c, err := retry.ParseClass(ck.Value)
				if err != nil {
					d.fail(ck, key, "%v", err)
					return
				}
				if t.Classes == nil {
					t.Classes = map[errclass.Class]retry.Curve{}
				}
				t.Classes[c] = d.curve(cv, key)
			})
		},
	})
	return t
}

// curve reads {tries: N, wait: DURATION}, either of them, or both.
func (d *decoder) curve(n *yaml.Node, key string) retry.Curve {
	var c retry.Curve
	d.mapping(n, key, map[string]func(k, v *yaml.Node){
		"tries": func(k, v *yaml.Node) {
			tk := join(key, "tries")
			p, ok := d.integer(v, tk, 1)
			switch {
			case !ok:
			case *p > retry.MaxTries:
				d.fail(v, tk, "%d: want 1 to %d requests", *p, retry.MaxTries)
			case d.maxTries > 0 && *p > d.maxTries:
				d.fail(v, tk, "%d is over the stack's bound of %d (the most tries it gives a class: CRAWL_MAX_TRIES, CRAWL_RETRY_CLASSES; --max-tries, --retry-classes; maxTries, retryClasses)",
					*p, d.maxTries)
			default:
				c.Tries = *p
			}
		},
		"wait": func(k, v *yaml.Node) {
			wk := join(key, "wait")
			s, ok := d.str(v, wk)
			if !ok {
				return
			}
			w, err := time.ParseDuration(s)
			if err != nil || w <= 0 || w > retry.MaxWait {
				d.fail(v, wk, "%q: want a duration of more than 0 and at most %v, such as 30s (the wait after the first failure; each next is 4 times longer, at most 15 times it)",
					s, retry.MaxWait)
				return
			}
			c.Wait = w
		},
	})
	if n.Kind == yaml.MappingNode && len(n.Content) == 0 {
		d.fail(n, key, "empty: set tries, wait or both")
	}
	return c
}
