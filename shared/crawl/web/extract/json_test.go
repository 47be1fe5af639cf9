package extract

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// apiProduct is the JSON API's shape, written out by encoding/json: the oracle is the Go values.
type apiProduct struct {
	Name  string   `json:"name"`
	Link  string   `json:"link,omitempty"`
	Price *float64 `json:"price,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

func price(v float64) *float64 { return &v }

func apiBody(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"title": "Kettles", "total": 12345678901234567,
		"products": []apiProduct{
			{Name: "Steel kettle", Link: "/p/1", Price: price(24.9), Tags: []string{"steel", "new"}},
			{Name: "Glass kettle", Link: "p/2", Price: price(31)},
			{Name: "No link"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The listing page as a JSON API yields the same items through JSONPath as the HTML listing does
// through CSS (TestItemsPerNode): one item per element of the selected array, its fields relative
// to the element, url: resolved against the response's URL.
func TestJSONItemsMatchTheHTMLListings(t *testing.T) {
	s, err := Compile([]Field{
		{Name: "title", JSON: "$.title"},
		{Name: "total", JSON: "$.total"},
		{Name: "names", JSON: "$.products[*].name", All: true},
		{Name: "cheap", JSON: "$.products[?@.price < 30].name"},
		{Name: "h1", CSS: "h1"},
	}, Rule{Name: "products", JSON: "$.products", Fields: []Field{
		{Name: "name", JSON: "$.name"}, {Name: "link", JSON: "$.link", URL: true},
		{Name: "tags", JSON: "$.tags[*]", All: true}}})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://shop.example/kettles/")
	got := s.Extract(u, apiBody(t), "application/json; charset=utf-8")
	html := listingItems(t, Rule{Name: "products", CSS: "li.product", Fields: []Field{
		{Name: "name", CSS: "a"}, {Name: "link", CSS: "a", Attr: "href", URL: true}, {Name: "tags", CSS: ".tag", All: true}}})
	if !reflect.DeepEqual(got.Items["products"], html.Items["products"]) {
		t.Errorf("json items:\n got %#v\nwant the HTML's %#v", got.Items["products"], html.Items["products"])
	}
	want := map[string]any{"title": "Kettles", "total": json.Number("12345678901234567"),
		"names": []any{"Steel kettle", "Glass kettle", "No link"}, "cheap": "Steel kettle", "h1": nil}
	if !reflect.DeepEqual(got.Data, want) {
		t.Errorf("data:\n got %#v\nwant %#v", got.Data, want)
	}
	// The same JSON selectors find nothing on an HTML page.
	if h := s.Extract(u, []byte(listing), "text/html"); h.Data["title"] != nil || h.Items != nil || h.Data["h1"] != "Kettles" {
		t.Errorf("on HTML: data %v, items %v; want json fields null, no items, h1 found", h.Data, h.Items)
	}
}

// A rule selecting each element ($.products[*]) yields the same items as one selecting the array;
// a +json type is JSON; a body that is not JSON is an error of ExtractJSON and nulls from Extract.
func TestJSONSelectsElementsTypesAndBadBodies(t *testing.T) {
	u, _ := url.Parse("https://shop.example/api")
	one := func(expr string) Result {
		s, err := Compile(nil, Rule{Name: "p", JSON: expr, Fields: []Field{{Name: "name", JSON: "$.name"}}})
		if err != nil {
			t.Fatal(err)
		}
		return s.Extract(u, apiBody(t), "application/vnd.api+json")
	}
	a, b := one("$.products"), one("$.products[*]")
	if n := len(a.Items["p"].([]any)); n != 3 || !reflect.DeepEqual(a.Items, b.Items) {
		t.Errorf("$.products gives %v, $.products[*] %v; want the same 3 items", a.Items, b.Items)
	}
	s, _ := Compile([]Field{{Name: "title", JSON: "$.title"}})
	for _, bad := range []string{`{"title": "x"`, `{"title": "x"} {"title": "y"}`, `<html>`} {
		if _, err := s.ExtractJSON(u, []byte(bad)); err == nil {
			t.Errorf("ExtractJSON(%q): no error", bad)
		}
		if r := s.Extract(u, []byte(bad), "application/json"); r.Data["title"] != nil {
			t.Errorf("Extract(%q) = %v, want title null", bad, r.Data)
		}
	}
	for ct, want := range map[string]bool{"application/json": true, "text/json": true, "application/ld+json": true,
		"application/problem+json; charset=utf-8": true, "text/html": false, "application/jsonx": false, "text/plain": false} {
		if IsJSON(ct) != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, !want, want)
		}
	}
}

// A bad JSONPath, or a json rule with a field that is not json, is refused at Compile, naming the
// setting at fault.
func TestBadJSONSelectorsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		fields []Field
		rules  []Rule
		want   string
	}{
		{fields: []Field{{Name: "a", JSON: "products[0]"}}, want: "json: expression"},
		{fields: []Field{{Name: "a", JSON: "$.x[?@.y ==]"}}, want: "json: expression"},
		{fields: []Field{{Name: "a", JSON: "$.x", Attr: "href"}}, want: "attr goes with css or xpath"},
		{fields: []Field{{Name: "a", JSON: "$.x", CSS: "h1"}}, want: "exactly one of"},
		{rules: []Rule{{Name: "r", JSON: "$.x", Fields: []Field{{Name: "a", CSS: "h1"}}}}, want: "fields.a: a field of a json item is json"},
		{rules: []Rule{{Name: "r", JSON: "$[", Fields: []Field{{Name: "a", JSON: "$.a"}}}}, want: "json: expression"},
		{rules: []Rule{{Name: "r", JSON: "$.x", CSS: "li", Fields: []Field{{Name: "a", JSON: "$.a"}}}}, want: "exactly one of css, xpath and json"},
	} {
		_, err := Compile(tc.fields, tc.rules...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compile(%+v, %+v) = %v, want %q", tc.fields, tc.rules, err, tc.want)
		}
	}
}
