package extract

import (
	"fmt"
	"net/url"
	"sort"
	"sync"

	"github.com/PuerkitoBio/goquery"
)

// Page is what an Extractor works on: one HTML page, parsed.
type Page struct {
	// URL is the page's final URL (after redirects).
	URL *url.URL
	// Doc is the page's document, decoded to UTF-8. Extractors must only read it: the fields of
	// a spec share one.
	Doc *goquery.Document
	// isJSON marks a JSON response, whose document is json (Doc is nil): only JSON selectors
	// run on it, and no extractor.
	isJSON bool
	json   any
}

// Extractor is extraction code in Go, for what selectors cannot say. A spec field names it with
// `extractor: NAME` once it is registered under that name. Its value must marshal to JSON; nil
// is a field that found nothing. An error makes the field null and is kept in the record's
// dataErrors: it never fails the page. Extract is called concurrently for many pages.
type Extractor interface {
	Extract(p *Page) (any, error)
}

// Func adapts a function to Extractor.
type Func func(p *Page) (any, error)

// Extract calls fn(p).
func (fn Func) Extract(p *Page) (any, error) { return fn(p) }

var (
	regMu    sync.RWMutex
	registry = map[string]Extractor{}
)

// Register makes e known as name to spec fields. Call it from an init function of the program
// that runs the parse handler, and of the one that reads specs (schedule, crawl run), so that a
// spec naming it is accepted there. It panics when name is taken or e is nil, as
// database/sql.Register does: both are programming errors found at start-up.
func Register(name string, e Extractor) {
	if e == nil {
		panic("extract: Register of a nil extractor")
	}
	if !namePattern.MatchString(name) {
		panic(fmt.Sprintf("extract: Register %q: want letters, digits and _", name))
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("extract: Register called twice for " + name)
	}
	registry[name] = e
}

// Lookup returns the extractor registered as name.
func Lookup(name string) (Extractor, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	e, ok := registry[name]
	return e, ok
}

// Names lists the registered extractors, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
