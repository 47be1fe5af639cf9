package extract

import (
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

const page = `<!doctype html><html><head>
<meta charset="windows-1252">
<title>Ignored</title>
<meta property="og:title" content="A kettle">
<meta property="og:image" content="/a.jpg"><meta property="og:image" content="/b.jpg">
<meta name="description" content="Boils water, SKU-42.">
<script type="application/ld+json">{"@context":"https://schema.org","@graph":[
 {"@type":"Organization","name":"Shop"},
 {"@type":["Thing","https://schema.org/Product"],"name":"Kettle","sku":"K-1"}]}</script>
<script type="application/ld+json">not json</script>
<script type="application/ld+json">{"@type":"Product","name":"Lid"}</script>
</head><body>
<h1>  The   kettle
</h1>
<span class="price">Price: 12,50 ` + "\x80" + `</span>
<a class="tag" href="/t/steel">steel</a><a class="tag" href="/t/blue">blue</a><a class="tag">no href</a>
</body></html>`

func run(t *testing.T, fields ...Field) Result {
	t.Helper()
	s, err := Compile(fields)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://127.0.0.1/kettle")
	return s.Extract(u, []byte(page), "text/html")
}

func TestFields(t *testing.T) {
	tests := []struct {
		name  string
		field Field
		want  any
	}{
		{"css text, whitespace collapsed", Field{CSS: "h1"}, "The kettle"},
		{"css text in the page's charset", Field{CSS: ".price"}, "Price: 12,50 €"},
		{"css attr", Field{CSS: "a.tag", Attr: "href"}, "/t/steel"},
		{"css all, elements without the attr left out", Field{CSS: "a.tag", Attr: "href", All: true}, []any{"/t/steel", "/t/blue"}},
		{"css all text", Field{CSS: "a.tag", All: true}, []any{"steel", "blue", "no href"}},
		{"regexp group", Field{CSS: ".price", Regexp: `([0-9]+),([0-9]+)`}, "12"},
		{"regexp whole match", Field{CSS: ".price", Regexp: `[0-9]+,[0-9]+`}, "12,50"},
		{"regexp on a list drops non-matches", Field{CSS: "a.tag", All: true, Regexp: `^b`}, []any{"b"}},
		{"meta name", Field{Meta: "description", Regexp: `SKU-[0-9]+`}, "SKU-42"},
		{"meta property", Field{Meta: "og:title"}, "A kettle"},
		{"opengraph", Field{OpenGraph: true}, map[string]any{"title": "A kettle", "image": []any{"/a.jpg", "/b.jpg"}}},
		{"jsonld first of a type, in a @graph, with a type list and an IRI", Field{JSONLD: "Product"},
			map[string]any{"@type": []any{"Thing", "https://schema.org/Product"}, "name": "Kettle", "sku": "K-1"}},
		{"jsonld all of a type", Field{JSONLD: "product", All: true}, []any{
			map[string]any{"@type": []any{"Thing", "https://schema.org/Product"}, "name": "Kettle", "sku": "K-1"},
			map[string]any{"@type": "Product", "name": "Lid"}}},
		{"jsonld every object", Field{JSONLD: "*"}, []any{
			map[string]any{"@type": "Organization", "name": "Shop"},
			map[string]any{"@type": []any{"Thing", "https://schema.org/Product"}, "name": "Kettle", "sku": "K-1"},
			map[string]any{"@type": "Product", "name": "Lid"}}},
		{"xpath element text", Field{XPath: "//h1"}, "The kettle"},
		{"xpath attribute node", Field{XPath: "//a[@class='tag']/@href"}, "/t/steel"},
		{"xpath attr of elements, those without it left out", Field{XPath: "//a[@class='tag']", Attr: "href", All: true}, []any{"/t/steel", "/t/blue"}},
		{"xpath all text nodes", Field{XPath: "//a[@class='tag']/text()", All: true}, []any{"steel", "blue", "no href"}},
		{"xpath a string", Field{XPath: "normalize-space(string(//h1))"}, "The kettle"},
		{"xpath a number", Field{XPath: "count(//a[@class='tag'])"}, "3"},
		{"xpath a boolean", Field{XPath: "boolean(//h1)"}, true},
		{"xpath with regexp", Field{XPath: "//span[@class='price']", Regexp: `([0-9]+),`}, "12"},
		{"url resolves against the page", Field{CSS: "a.tag", Attr: "href", All: true, URL: true},
			[]any{"http://127.0.0.1/t/steel", "http://127.0.0.1/t/blue"}},
		{"url on meta", Field{Meta: "og:image", URL: true}, "http://127.0.0.1/a.jpg"},
		// Found nothing: null, not an error.
		{"xpath no match", Field{XPath: "//h2"}, nil},
		{"xpath all no match", Field{XPath: "//h2", All: true}, nil},
		{"xpath empty string", Field{XPath: "string(//h2)"}, nil},
		{"css no match", Field{CSS: "h2"}, nil},
		{"css all no match", Field{CSS: "h2", All: true}, nil},
		{"regexp no match", Field{CSS: "h1", Regexp: `[0-9]`}, nil},
		{"meta missing", Field{Meta: "keywords"}, nil},
		{"jsonld type missing", Field{JSONLD: "Recipe"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.field.Name = "f"
			got := run(t, tt.field)
			v, ok := got.Data["f"]
			if !ok {
				t.Fatalf("no entry for the field in %v", got.Data)
			}
			if !reflect.DeepEqual(v, tt.want) {
				t.Errorf("got %#v, want %#v", v, tt.want)
			}
			if len(got.Errors) != 0 {
				t.Errorf("errors %v", got.Errors)
			}
		})
	}
}

func TestNothingFoundIsJSONNull(t *testing.T) {
	got := run(t, Field{Name: "missing", CSS: "nav"}, Field{Name: "h", CSS: "h1"})
	b, err := json.Marshal(got.Data)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"h":"The kettle","missing":null}`; string(b) != want {
		t.Errorf("data %s, want %s", b, want)
	}
}

func TestCompileRefusesFieldsThatCannotWork(t *testing.T) {
	tests := []struct {
		name    string
		field   Field
		key     string
		message string
	}{
		{"malformed selector", Field{Name: "a", CSS: "div[["}, "css", `selector "div[["`},
		{"malformed regexp", Field{Name: "a", CSS: "p", Regexp: "(["}, "regexp", "missing closing ]"},
		{"no source", Field{Name: "a"}, "", "want exactly one of css, xpath, json, jsonld, meta, opengraph, visible_text and extractor, got 0"},
		{"two sources", Field{Name: "a", CSS: "p", Meta: "x"}, "", "got 2"},
		{"attr without css", Field{Name: "a", Meta: "x", Attr: "href"}, "attr", "attr goes with css or xpath"},
		{"regexp on jsonld", Field{Name: "a", JSONLD: "*", Regexp: "x"}, "regexp", "regexp goes with css, xpath, json or meta"},
		{"all on meta", Field{Name: "a", Meta: "x", All: true}, "all", "all goes with css, xpath, json or jsonld"},
		{"malformed xpath", Field{Name: "a", XPath: "//a[@"}, "xpath", `expression "//a[@"`},
		{"css and xpath", Field{Name: "a", CSS: "p", XPath: "//p"}, "", "got 2"},
		{"url on jsonld", Field{Name: "a", JSONLD: "*", URL: true}, "url", "url goes with css, xpath, json or meta"},
		{"bad name", Field{Name: "1a", CSS: "p"}, "name", `"1a"`},
		{"unknown extractor", Field{Name: "a", Extractor: "nope"}, "extractor", `no extractor is registered as "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]Field{tt.field})
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("error %v, want a KeyError", err)
			}
			if ke.Key != tt.key || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q (key %q), want key %q and %q", err, ke.Key, tt.key, tt.message)
			}
		})
	}
	if _, err := Compile([]Field{{Name: "a", CSS: "p"}, {Name: "a", CSS: "h1"}}); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("a name twice: %v", err)
	}
}

func TestRegisteredExtractor(t *testing.T) {
	Register("test_links", Func(func(p *Page) (any, error) {
		return p.Doc.Find("a").Length(), nil
	}))
	Register("test_fails", Func(func(p *Page) (any, error) { return nil, errors.New("boom") }))
	got := run(t, Field{Name: "n", Extractor: "test_links"}, Field{Name: "bad", Extractor: "test_fails"}, Field{Name: "h", CSS: "h1"})
	if got.Data["n"] != 3 || got.Data["h"] != "The kettle" {
		t.Errorf("data %v", got.Data)
	}
	if v, ok := got.Data["bad"]; !ok || v != nil {
		t.Errorf("a failing extractor's field is %v (present %v), want null", v, ok)
	}
	if got.Errors["bad"] != "extractor test_fails: boom" {
		t.Errorf("errors %v", got.Errors)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	Register("test_links", Func(func(*Page) (any, error) { return nil, nil }))
}

func TestBounds(t *testing.T) {
	long := "<p>" + strings.Repeat("é", MaxValueBytes) + "</p>"
	var many strings.Builder
	for range MaxItems + 5 {
		many.WriteString("<i>x</i>")
	}
	s, err := Compile([]Field{{Name: "long", CSS: "p"}, {Name: "many", CSS: "i", All: true}})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Extract(nil, []byte(long+many.String()), "text/html; charset=utf-8")
	if v := got.Data["long"].(string); len(v) > MaxValueBytes || !strings.HasPrefix(v, "éé") || strings.ContainsRune(v, '\uFFFD') {
		t.Errorf("a long value is %d bytes, want at most %d of whole characters", len(v), MaxValueBytes)
	}
	if n := len(got.Data["many"].([]any)); n != MaxItems {
		t.Errorf("%d items, want %d", n, MaxItems)
	}
	// Fields past MaxDataBytes are null, and say why.
	var fields []Field
	for i := range MaxDataBytes/MaxValueBytes + 2 {
		fields = append(fields, Field{Name: "f" + strings.Repeat("x", i), CSS: "p"})
	}
	s, err = Compile(fields)
	if err != nil {
		t.Fatal(err)
	}
	got = s.Extract(nil, []byte(long), "text/html; charset=utf-8")
	if len(got.Errors) == 0 {
		t.Fatal("no field was cut for the data's size")
	}
	b, _ := json.Marshal(got.Data)
	if len(b) > MaxDataBytes+len(fields)*80 {
		t.Errorf("data is %d bytes, over the bound", len(b))
	}
}

// XPath and CSS are two engines (antchfx/htmlquery, andybalholm/cascadia): expressions that select
// the same elements give the same values, each the other's oracle.
func TestXPathAgreesWithCSS(t *testing.T) {
	pairs := []struct{ css, xpath string }{
		{"h1", "//h1"},
		{"a.tag", "//a[@class='tag']"},
		{"span.price", "//span[@class='price']"},
		{"head > title", "/html/head/title"},
		{"p", "//p"},
	}
	for _, p := range pairs {
		for _, all := range []bool{false, true} {
			for _, attr := range []string{"", "href"} {
				got := run(t, Field{Name: "c", CSS: p.css, All: all, Attr: attr}, Field{Name: "x", XPath: p.xpath, All: all, Attr: attr})
				if !reflect.DeepEqual(got.Data["c"], got.Data["x"]) {
					t.Errorf("css %q and xpath %q (all %v, attr %q): %#v and %#v", p.css, p.xpath, all, attr, got.Data["c"], got.Data["x"])
				}
			}
		}
	}
}
