package pdftext

import (
	"bytes"
	"net/url"
	"strings"

	"github.com/ledongthuc/pdf"

	"github.com/crawlstack/crawlstack/shared/crawl/web/doctype"
)

// textWriter keeps the text up to max bytes; past it, full is set and the page stops.
type textWriter struct {
	b    bytes.Buffer
	max  int
	full bool
}

// errFull stops the interpretation of a page whose text is over the cap.
type errFull struct{}

func (t *textWriter) write(s string) {
	if t.full {
		panic(errFull{})
	}
	if t.b.Len()+len(s) > t.max {
		kept, _ := doctype.Cut(s, t.max-t.b.Len())
		t.b.WriteString(kept)
		t.full = true
		panic(errFull{})
	}
	t.b.WriteString(s)
}

// pageText writes the text of page p to t, as the library's Page.GetPlainText reads it (text
// objects on lines of their own), but stopping as soon as t is full: a page's content stream can
// decompress to far more than the cap.
func pageText(p pdf.Page, t *textWriter) (err error) {
	defer func() {
		if x := recover(); x != nil {
			if _, ok := x.(errFull); ok {
				return
			}
			panic(x) // Extract recovers it into an error
		}
	}()
	content := p.V.Key("Contents")
	if content.Kind() == pdf.Null {
		return nil
	}
	fonts := map[string]*pdf.Font{}
	for _, name := range p.Fonts() {
		f := p.Font(name)
		fonts[name] = &f
	}
	var enc pdf.TextEncoding
	show := func(raw string) {
		if enc != nil {
			raw = enc.Decode(raw)
		}
		t.write(raw)
	}
	pdf.Interpret(content, func(stk *pdf.Stack, op string) {
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "BT", "T*":
			t.write("\n")
		case "Tf":
			enc = nil
			if n == 2 {
				if f, ok := fonts[args[0].Name()]; ok {
					enc = f.Encoder()
				}
			}
		case "Tj", "'", "\"":
			if n > 0 {
				show(args[n-1].RawString())
			}
		case "TJ":
			if n == 1 {
				for i := 0; i < args[0].Len(); i++ {
					if x := args[0].Index(i); x.Kind() == pdf.String {
						show(x.RawString())
					}
				}
			}
		}
	})
	return nil
}

// pageLinks are the http(s) URIs of the link annotations of page p, resolved against base.
func pageLinks(p pdf.Page, base *url.URL) []string {
	var out []string
	annots := p.V.Key("Annots")
	for i := 0; i < annots.Len(); i++ {
		a := annots.Index(i)
		if a.Key("Subtype").Name() != "Link" {
			continue
		}
		act := a.Key("A")
		if act.Key("S").Name() != "URI" {
			continue
		}
		ref, err := url.Parse(strings.TrimSpace(act.Key("URI").RawString()))
		if err != nil {
			continue
		}
		u := ref
		if base != nil {
			u = base.ResolveReference(ref)
		}
		if u.Scheme == "http" || u.Scheme == "https" {
			out = append(out, u.String())
		}
	}
	return out
}
