package extract

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

const listing = `<html><body><h1>Kettles</h1><ul>
<li class="product"><a href="/p/1"> Steel  kettle </a><span class="price">24.90</span><span class="tag">steel</span><span class="tag">new</span></li>
<li class="product"><a href="p/2">Glass kettle</a><span class="price">31.00</span></li>
<li class="product"><a>No link</a></li>
</ul><a href="/other">not a product</a></body></html>`

func listingItems(t *testing.T, rules ...Rule) Result {
	t.Helper()
	s, err := Compile(nil, rules...)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://shop.example/kettles/")
	return s.Extract(u, []byte(listing), "text/html")
}

// A rule yields one item per node, each field run within its node; the same rule in CSS and in
// XPath (two engines) yields the same items, and both the items written out by hand.
func TestItemsPerNode(t *testing.T) {
	css := Rule{Name: "products", CSS: "li.product", Fields: []Field{
		{Name: "name", CSS: "a"}, {Name: "link", CSS: "a", Attr: "href", URL: true},
		{Name: "price", CSS: ".price"}, {Name: "tags", CSS: ".tag", All: true}}}
	xp := Rule{Name: "products", XPath: "//li[@class='product']", Fields: []Field{
		{Name: "name", XPath: "a"}, {Name: "link", XPath: "a/@href", URL: true},
		{Name: "price", XPath: ".//span[@class='price']"}, {Name: "tags", XPath: "span[@class='tag']", All: true}}}
	want := []any{
		map[string]any{"name": "Steel kettle", "link": "https://shop.example/p/1", "price": "24.90", "tags": []any{"steel", "new"}},
		map[string]any{"name": "Glass kettle", "link": "https://shop.example/kettles/p/2", "price": "31.00", "tags": nil},
		map[string]any{"name": "No link", "link": nil, "price": nil, "tags": nil},
	}
	for _, r := range []Rule{css, xp} {
		got := listingItems(t, r)
		if !reflect.DeepEqual(got.Items["products"], want) {
			t.Errorf("rule %+v:\n got %#v\nwant %#v", r, got.Items["products"], want)
		}
		if len(got.Errors) != 0 || len(got.Data) != 0 {
			t.Errorf("rule %+v: errors %v, data %v, want none", r, got.Errors, got.Data)
		}
	}
}

// "." is the item's node itself and "@x" its attribute; a rule that selects nothing is left out.
func TestItemNodeItselfAndEmptyRules(t *testing.T) {
	got := listingItems(t,
		Rule{Name: "links", XPath: "//a[@href]", Fields: []Field{{Name: "text", XPath: "."}, {Name: "href", XPath: "@href"}}},
		Rule{Name: "none", CSS: "table tr", Fields: []Field{{Name: "x", CSS: "td"}}})
	want := []any{
		map[string]any{"text": "Steel kettle", "href": "/p/1"},
		map[string]any{"text": "Glass kettle", "href": "p/2"},
		map[string]any{"text": "not a product", "href": "/other"},
	}
	if !reflect.DeepEqual(got.Items["links"], want) {
		t.Errorf("links: %#v\nwant %#v", got.Items["links"], want)
	}
	if _, ok := got.Items["none"]; ok {
		t.Errorf("a rule that selects nothing has items: %v", got.Items)
	}
}

// A page's items stop at MaxItemsBytes, and the record says so.
func TestItemsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("<ul>")
	for i := range 900 {
		fmt.Fprintf(&b, "<li>%d %s</li>", i, strings.Repeat("x", 1000))
	}
	b.WriteString("</ul>")
	s, err := Compile(nil, Rule{Name: "rows", CSS: "li", Fields: []Field{{Name: "text", XPath: "."}}})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Extract(&url.URL{Scheme: "https", Host: "x.example"}, []byte(b.String()), "text/html")
	n := len(got.Items["rows"].([]any))
	if n == 0 || n >= 900 || !strings.Contains(got.Errors["items.rows"], fmt.Sprintf("%d of the rule's items kept", n)) {
		t.Errorf("%d items kept, errors %v: want the rows cut short of 900, and said", n, got.Errors)
	}
}

func TestRulesThatCannotWorkAreRefused(t *testing.T) {
	f := []Field{{Name: "a", CSS: "a"}}
	tests := []struct {
		name    string
		rule    Rule
		key     string
		message string
	}{
		{"no selector", Rule{Name: "r", Fields: f}, "", "want exactly one of css, xpath and json"},
		{"two selectors", Rule{Name: "r", CSS: "li", XPath: "//li", Fields: f}, "", "want exactly one of css, xpath and json"},
		{"bad css", Rule{Name: "r", CSS: "li[[", Fields: f}, "css", `selector "li[["`},
		{"bad xpath", Rule{Name: "r", XPath: "//li[", Fields: f}, "xpath", `expression "//li["`},
		{"no fields", Rule{Name: "r", CSS: "li"}, "fields", "at least one field"},
		{"a page-level field", Rule{Name: "r", CSS: "li", Fields: []Field{{Name: "m", Meta: "x"}}}, "fields.m", "css or xpath, within the item's node"},
		{"a bad field", Rule{Name: "r", CSS: "li", Fields: []Field{{Name: "m", CSS: "a", Regexp: "("}}}, "fields.m.regexp", "missing closing )"},
		{"bad name", Rule{Name: "9r", CSS: "li", Fields: f}, "name", `"9r"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(nil, tt.rule)
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != tt.key || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %v, want key %q and %q", err, tt.key, tt.message)
			}
		})
	}
	if _, err := Compile(nil, Rule{Name: "r", CSS: "li", Fields: f}, Rule{Name: "r", CSS: "p", Fields: f}); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("a rule name twice: %v", err)
	}
}

// XPath's values come in document order, as CSS's do: antchfx yields //a grouped by parent.
func TestXPathValuesInDocumentOrder(t *testing.T) {
	s, err := Compile([]Field{{Name: "x", XPath: "//a[@href]/@href", All: true}, {Name: "first", XPath: "//a[@href]"},
		{Name: "c", CSS: "a[href]", Attr: "href", All: true}})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Extract(&url.URL{Scheme: "https", Host: "x.example"}, []byte(listing), "text/html")
	want := []any{"/p/1", "p/2", "/other"}
	if !reflect.DeepEqual(got.Data["x"], want) || !reflect.DeepEqual(got.Data["c"], want) || got.Data["first"] != "Steel kettle" {
		t.Errorf("xpath %v, first %v, css %v: want %v in document order", got.Data["x"], got.Data["first"], got.Data["c"], want)
	}
}
