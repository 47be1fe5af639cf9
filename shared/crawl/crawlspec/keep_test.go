package crawlspec

import (
	"slices"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/web/doctype"
)

func TestKeepsMatchesATypeOrItsWildcard(t *testing.T) {
	keep := []string{"application/pdf", "image/*"}
	for mt, want := range map[string]bool{"application/pdf": true, "image/png": true, "image/svg+xml": true,
		"application/json": false, "text/plain": false, "imagex/png": false} {
		if got := Keeps(keep, mt); got != want {
			t.Errorf("Keeps(%v, %s) = %v, want %v", keep, mt, got, want)
		}
	}
}

// The kinds a spec parses are fetched and stored as kept types are (the fetcher asks Keeps), and a
// json selector parses JSON without listing it; a spec that parses nothing keeps only its keep.
func TestParsedKindsAreKept(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		kinds []doctype.Kind
		kept  map[string]bool
	}{
		{"parse: [pdf, text]\nkeep: ['image/*']\n", []doctype.Kind{doctype.PDF, doctype.Text},
			map[string]bool{"application/pdf": true, "text/plain": true, "image/png": true, "application/json": false, "text/csv": false}},
		{"extract:\n  t: {json: $.title}\n", []doctype.Kind{doctype.JSON},
			map[string]bool{"application/json": true, "application/ld+json": true, "application/jsonx": false, "application/pdf": false}},
		{"keep: [application/pdf]\n", nil,
			map[string]bool{"application/pdf": true, "text/plain": false, "application/json": false}},
	} {
		s, err := Parse([]byte("version: 1\nseeds: [http://127.0.0.1/]\n"+tc.spec), Bounds{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Over(Crawl{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Parse, tc.kinds) {
			t.Errorf("%q: parses %v, want %v", tc.spec, c.Parse, tc.kinds)
		}
		for mt, want := range tc.kept {
			if got := Keeps(c.Keep, mt); got != want {
				t.Errorf("%q: Keeps(%v, %s) = %v, want %v", tc.spec, c.Keep, mt, got, want)
			}
		}
	}
}
