package extract

import (
	"net/url"
	"strings"
	"testing"
)

// visible_text is the text a reader sees: not the head's, scripts' or styles'; inline elements
// keep a word whole and blocks part words; it is cut at MaxValueBytes, and nil on a page of none.
func TestVisibleText(t *testing.T) {
	s, err := Compile([]Field{{Name: "text", VisibleText: true}})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://x.example/")
	for page, want := range map[string]any{
		`<html><head><title>T</title><style>p{}</style></head><body><h1>Big  sale</h1><p>Kett<b>les</b> for
		 <a href="/">all</a></p><script>var x = "hidden"</script><noscript>no js</noscript><div>End</div></body></html>`: "Big sale Kettles for all End",
		`<html><body><script>only()</script></body></html>`: nil,
		"<p>" + strings.Repeat("word ", 10000) + "</p>":     strings.TrimSpace(strings.Repeat("word ", MaxValueBytes/5)) + " ",
	} {
		got := s.Extract(u, []byte(page), "text/html").Data["text"]
		if w, ok := want.(string); ok && strings.HasSuffix(w, " ") {
			// the cut page: MaxValueBytes of it, word after word
			g, _ := got.(string)
			if len(g) != MaxValueBytes || !strings.HasPrefix(strings.Repeat("word ", 10000), g) {
				t.Errorf("a long page: %d bytes, want %d of its words", len(g), MaxValueBytes)
			}
			continue
		}
		if got != want {
			t.Errorf("visible text of %.60q = %q, want %q", page, got, want)
		}
	}
}
