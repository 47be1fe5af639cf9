package crawlspec

import (
	"slices"
	"time"

	"github.com/andybalholm/cascadia"
	"gopkg.in/yaml.v3"
)

// Render is a spec's render section: which of its pages run their scripts in a headless browser
// before parse reads them (shared/handler/renderer), what the browser waits for, and what a page
// may cost. A crawl without one renders nothing (docs/spec.md, docs/render.md).
//
//	render:
//	  patterns: ['/app/']     # these URLs always render
//	  when_fewer_links: 3     # or: the static HTML has fewer links than this
//	  when_no_main: true      # or: the static HTML has no <main> with text
//	  wait: {network_idle: true, selector: '#results', max: 10s}
//	  limits: {max_requests: 50, max_bytes: 5000000, load: [image]}
type Render struct {
	// Patterns are regexps on a page's URL: a page whose URL matches one always renders.
	Patterns []string `json:"patterns,omitempty"`
	// WhenFewerLinks renders a page whose static HTML has fewer links than this (0: off).
	WhenFewerLinks int `json:"whenFewerLinks,omitempty"`
	// WhenNoMain renders a page whose static HTML has no <main> element with text.
	WhenNoMain bool         `json:"whenNoMain,omitempty"`
	Wait       RenderWait   `json:"wait,omitzero"`
	Limits     RenderLimits `json:"limits,omitzero"`
}

// RenderWait says when a rendered page is taken (render.Wait): at the first condition met, and at
// Max at the latest.
type RenderWait struct {
	NetworkIdle bool          `json:"networkIdle,omitempty"`
	Selector    string        `json:"selector,omitempty"`
	Max         time.Duration `json:"max,omitempty"`
}

// RenderLimits bound what one rendered page may cost (render.Limits; zero: the defaults).
type RenderLimits struct {
	MaxRequests int      `json:"maxRequests,omitempty"`
	MaxBytes    int64    `json:"maxBytes,omitempty"`
	Load        []string `json:"load,omitempty"`
}

// Bounds of the render section.
const (
	// MaxRenderWait bounds wait.max: a page's render must end well inside the render function's
	// timeout, with the rest of its batch.
	MaxRenderWait = 60 * time.Second
	// MaxRenderRequests bounds limits.max_requests.
	MaxRenderRequests = 1000
	// MaxRenderBytes bounds limits.max_bytes.
	MaxRenderBytes = 100 << 20
)

// RenderLoadable are the resource types that limits.load may name: those a browser blocks by
// default (render.DefaultBlocked).
var RenderLoadable = []string{"image", "media", "font"}

// renderSection reads the spec's render section.
func (d *decoder) renderSection(n *yaml.Node) *Render {
	r := &Render{}
	before := len(d.errs)
	d.mapping(n, "render", map[string]func(k, v *yaml.Node){
		"patterns": func(k, v *yaml.Node) { r.Patterns = d.patterns(v, "render.patterns") },
		"when_fewer_links": func(k, v *yaml.Node) {
			if p, ok := d.integer(v, "render.when_fewer_links", 1); ok {
				r.WhenFewerLinks = *p
			}
		},
		"when_no_main": func(k, v *yaml.Node) { r.WhenNoMain, _ = d.boolean(v, "render.when_no_main") },
		"wait":         func(k, v *yaml.Node) { r.Wait = d.renderWait(v) },
		"limits":       func(k, v *yaml.Node) { r.Limits = d.renderLimits(v) },
	})
	if len(d.errs) == before && len(r.Patterns) == 0 && r.WhenFewerLinks == 0 && !r.WhenNoMain {
		d.fail(n, "render", "no page would render: set patterns (patterns: ['.'] renders every page), when_fewer_links or when_no_main")
	}
	return r
}

func (d *decoder) renderWait(n *yaml.Node) RenderWait {
	var w RenderWait
	d.mapping(n, "render.wait", map[string]func(k, v *yaml.Node){
		"network_idle": func(k, v *yaml.Node) { w.NetworkIdle, _ = d.boolean(v, "render.wait.network_idle") },
		"selector": func(k, v *yaml.Node) {
			s, ok := d.str(v, "render.wait.selector")
			if !ok {
				return
			}
			if _, err := cascadia.Compile(s); err != nil {
				d.fail(v, "render.wait.selector", "%q is not a CSS selector: %v", s, err)
				return
			}
			w.Selector = s
		},
		"max": func(k, v *yaml.Node) {
			s, ok := d.str(v, "render.wait.max")
			if !ok {
				return
			}
			m, err := time.ParseDuration(s)
			if err != nil || m <= 0 || m > MaxRenderWait {
				d.fail(v, "render.wait.max", "%q: want a duration of more than 0 and at most %v, such as 10s", s, MaxRenderWait)
				return
			}
			w.Max = m
		},
	})
	return w
}

func (d *decoder) renderLimits(n *yaml.Node) RenderLimits {
	var l RenderLimits
	d.mapping(n, "render.limits", map[string]func(k, v *yaml.Node){
		"max_requests": func(k, v *yaml.Node) {
			p, ok := d.integer(v, "render.limits.max_requests", 1)
			switch {
			case !ok:
			case *p > MaxRenderRequests:
				d.fail(v, "render.limits.max_requests", "%d: want 1 to %d sub-requests a page", *p, MaxRenderRequests)
			default:
				l.MaxRequests = *p
			}
		},
		"max_bytes": func(k, v *yaml.Node) {
			p, ok := d.integer(v, "render.limits.max_bytes", 1)
			switch {
			case !ok:
			case *p > MaxRenderBytes:
				d.fail(v, "render.limits.max_bytes", "%d: want 1 to %d bytes of sub-requests a page", *p, MaxRenderBytes)
			default:
				l.MaxBytes = int64(*p)
			}
		},
		"load": func(k, v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				d.fail(v, "render.limits.load", "want a list of resource types (%v), got %s", RenderLoadable, kindOf(v))
				return
			}
			for _, e := range v.Content {
				s, ok := d.str(e, "render.limits.load")
				if !ok {
					continue
				}
				if !slices.Contains(RenderLoadable, s) {
					d.fail(e, "render.limits.load", "%q: want one of %v (every other type loads already)", s, RenderLoadable)
					continue
				}
				l.Load = append(l.Load, s)
			}
		},
	})
	return l
}
