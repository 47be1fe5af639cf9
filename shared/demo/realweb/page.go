package realweb

// The pages: links drawn per page, and HTML written from a vocabulary of made-up words whose
// frequencies follow Zipf's law, as a language's do, in the markup of a real site (a head with
// inline style and script, navigation, an article of sections, paragraphs, lists and tables, cards
// with data attributes, a footer), so that a page compresses as a real one does, not as filler.

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
)

// newRand is a generator seeded by the web's seed and the parts that name what it draws.
func newRand(seed uint64, parts ...uint64) *rand.Rand {
	h := seed * 0x9e3779b97f4a7c15
	for _, p := range parts {
		h = (h ^ p) * 0xbf58476d1ce4e5b9
		h ^= h >> 31
	}
	return rand.New(rand.NewPCG(seed, h))
}

func hashString(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	return f.Sum64()
}

// Link is one link of a page: to page Page of host Host, or (Host < 0) to URL as it stands.
type Link struct {
	Host, Page int
	URL        string
}

// navLinks is how many of a page's on-site links are its host's navigation, the same on every page.
const navLinks = 20

// Links returns the links of page p of host h, in the order the page shows them: the host's
// navigation (its root, its first pages and its search page, which robots.txt disallows), then
// the page's own on-site links (first its two children in a binary tree of its host's pages, so
// that every page is within log2(pages) links of the root, then others of the host; one page in
// 25 also links a page that does not exist), then its off-site links: to pages of other hosts of
// the web, the big hosts more often (the host's rank drawn log-uniformly, as Zipf's law of
// exponent 1 would have it), and an OutOfScope share of them to hosts outside the web.
func (w *Web) Links(h, p int) []Link {
	o := w.opts
	r := newRand(o.Seed, 0x11, uint64(h), uint64(p))
	n := w.sizes[h]
	off := int(float64(o.Links)*o.OffSite + 0.5)
	on := o.Links - off
	var out []Link
	for i := 0; i < min(navLinks, on); i++ {
		out = append(out, Link{Host: h, Page: i % n})
	}
	out = append(out, Link{Host: -1, URL: strings.TrimSuffix(w.Roots[h], "/") + "/search"})
	for _, c := range []int{2*p + 1, 2*p + 2} {
		if c < n {
			out = append(out, Link{Host: h, Page: c})
		}
	}
	if p%25 == 7 {
		out = append(out, Link{Host: -1, URL: strings.TrimSuffix(w.Roots[h], "/") + Path(n+p)}) // a 404
	}
	for len(out) < on+1 {
		out = append(out, Link{Host: h, Page: r.IntN(n)})
	}
	unscoped := int(float64(off)*o.OutOfScope + 0.5)
	for i := 0; i < off; i++ {
		if i < unscoped {
			out = append(out, Link{Host: -1, URL: w.out[r.IntN(len(w.out))] + "/" + word(r.IntN(3000)) + "/" + word(r.IntN(3000))})
			continue
		}
		th := int(math.Pow(float64(o.Hosts), r.Float64())) - 1
		if o.Hosts > 1 && th == h {
			th = (th + 1) % o.Hosts
		}
		// Other sites are mostly linked at their home and their first pages.
		tp := min(int(math.Pow(float64(w.sizes[th]), r.Float64()))-1, w.sizes[th]-1)
		out = append(out, Link{Host: th, Page: max(tp, 0)})
	}
	return out
}

// href is the URL of l.
func (w *Web) href(l Link) string {
	if l.Host < 0 {
		return l.URL
	}
	return strings.TrimSuffix(w.Roots[l.Host], "/") + Path(l.Page)
}

// vocabulary is the made-up language of the pages: words of one to four syllables, the first
// ones short, as the frequent words of a language are.
var vocabulary = sync.OnceValue(func() []string {
	onsets := []string{"", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
		"br", "ch", "cl", "cr", "dr", "fl", "gr", "pl", "pr", "sh", "sl", "sp", "st", "str", "th", "tr"}
	nuclei := []string{"a", "e", "i", "o", "u", "ai", "ea", "ee", "ie", "oa", "ou", "y"}
	codas := []string{"", "", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "nt", "rk", "st", "ck", "sh"}
	r := rand.New(rand.NewPCG(7, 11))
	seen := map[string]bool{}
	var words []string
	for len(words) < 6000 {
		syllables := 1 + min(r.IntN(1+len(words)/600), 3)
		var b strings.Builder
		for i := 0; i < syllables; i++ {
			b.WriteString(onsets[r.IntN(len(onsets))])
			b.WriteString(nuclei[r.IntN(len(nuclei))])
			if i == syllables-1 || r.IntN(3) == 0 {
				b.WriteString(codas[r.IntN(len(codas))])
			}
		}
		if w := b.String(); len(w) > 1 && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
})

// word is the word of rank i (from 0) of the vocabulary.
func word(i int) string {
	v := vocabulary()
	return v[i%len(v)]
}

// writer writes one page's HTML.
type writer struct {
	b     strings.Builder
	r     *rand.Rand
	words *rand.Zipf
}

// text writes n words, each drawn by the vocabulary's Zipf law.
func (x *writer) text(n int) {
	for i := 0; i < n; i++ {
		if i > 0 {
			x.b.WriteByte(' ')
		}
		x.b.WriteString(word(int(x.words.Uint64())))
	}
}

// sentence writes a capitalised sentence of 6 to 25 words.
func (x *writer) sentence() {
	first := word(int(x.words.Uint64()))
	x.b.WriteString(strings.ToUpper(first[:1]))
	x.b.WriteString(first[1:])
	x.b.WriteByte(' ')
	x.text(5 + x.r.IntN(20))
	x.b.WriteByte('.')
}

// Render returns page p of host h.
func (w *Web) Render(h, p int) []byte {
	o := w.opts
	r := newRand(o.Seed, 0x22, uint64(h), uint64(p))
	x := &writer{r: r, words: rand.NewZipf(r, 1.3, 2, uint64(len(vocabulary())-1))}
	size := int(float64(o.MedianBytes) * math.Exp(0.45*r.NormFloat64()))
	size = min(max(size, o.MinBytes+2_000), o.MaxBytes-6_000)
	links := w.Links(h, p)
	site := strings.ToUpper(word(100 + h%900)[:1]) + word(100 + h%900)[1:] + " " + word(50+h%37)
	title := word(r.IntN(400)) + " " + word(r.IntN(2000)) + " " + word(r.IntN(2000))
	self := w.href(Link{Host: h, Page: p})

	b := &x.b
	fmt.Fprintf(b, "<!DOCTYPE html>\n<html lang=\"en\" class=\"no-js theme-%s\">\n<head>\n<meta charset=\"utf-8\">\n", word(r.IntN(30)))
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(b, "<title>%s | %s</title>\n<meta name=\"description\" content=\"", title, site)
	x.text(20 + r.IntN(15))
	fmt.Fprintf(b, "\">\n<link rel=\"canonical\" href=\"%s\">\n<link rel=\"stylesheet\" href=\"/assets/css/main.%08x.css\">\n", self, r.Uint32())
	fmt.Fprintf(b, "<link rel=\"icon\" href=\"/favicon.ico\">\n<meta property=\"og:title\" content=\"%s\">\n", title)
	x.style(12 + r.IntN(30))
	x.script(8 + r.IntN(20))
	fmt.Fprintf(b, "</head>\n<body class=\"page page-%d layout-%s\" data-page-id=\"%d\">\n", p, word(r.IntN(20)), r.IntN(1_000_000))

	i := 0 // the next link to write
	next := func() (string, bool) {
		if i >= len(links) {
			return "", false
		}
		i++
		return w.href(links[i-1]), true
	}
	// The host's navigation: its links of the same place on every page.
	fmt.Fprintf(b, "<header class=\"site-header\">\n<a class=\"logo\" href=\"/\" aria-label=\"%s\"><img src=\"/assets/img/logo.svg\" alt=\"%s\" width=\"120\" height=\"32\"></a>\n", site, site)
	b.WriteString("<nav class=\"main-nav\" role=\"navigation\">\n<ul class=\"nav-list\">\n")
	for j := 0; j < min(navLinks, len(links)); j++ {
		u, _ := next()
		fmt.Fprintf(b, "<li class=\"menu-item menu-item-type-post_type menu-item-object-page nav-item\"><a class=\"nav-link\" itemprop=\"url\" href=\"%s\"><span itemprop=\"name\">", u)
		x.text(1 + r.IntN(2))
		b.WriteString("</span></a></li>\n")
	}
	u, _ := next() // the search page
	fmt.Fprintf(b, "</ul>\n<form class=\"search\" action=\"/search\" method=\"get\"><input type=\"search\" name=\"q\" placeholder=\"Search\"><a href=\"%s\">Search</a></form>\n</nav>\n</header>\n", u)

	// The article: sections of paragraphs with the page's links in them, a list, a table, cards.
	fmt.Fprintf(b, "<main id=\"content\" class=\"main\">\n<article class=\"post\" itemscope itemtype=\"https://schema.org/Article\">\n<h1 class=\"post-title\">%s</h1>\n", title)
	fmt.Fprintf(b, "<p class=\"byline\">By <a rel=\"author\" href=\"/\">%s %s</a> · <time datetime=\"20%02d-%02d-%02d\">%d %s 20%02d</time></p>\n",
		word(r.IntN(500)), word(r.IntN(500)), 10+r.IntN(16), 1+r.IntN(12), 1+r.IntN(28), 1+r.IntN(28), word(r.IntN(12)), 10+r.IntN(16))
	// Room for the footer and the closing tags.
	for section := 0; b.Len() < size-3_000; section++ {
		fmt.Fprintf(b, "<section id=\"s%d\" class=\"section\">\n<h2>", section)
		x.text(2 + r.IntN(5))
		b.WriteString("</h2>\n")
		for k := 1 + r.IntN(5); k > 0; k-- {
			b.WriteString("<div class=\"content-block content-block--text wp-block-group\"><div class=\"wp-block-group__inner-container\">\n<p class=\"has-text-align-left has-medium-font-size\">")
			for s := 2 + r.IntN(6); s > 0; s-- {
				x.sentence()
				b.WriteByte(' ')
				switch r.IntN(9) {
				case 0, 1:
					if u, ok := next(); ok {
						fmt.Fprintf(b, "<a href=\"%s\">", u)
						x.text(1 + r.IntN(4))
						b.WriteString("</a> ")
					}
				case 2:
					b.WriteString("<strong>")
					x.text(1 + r.IntN(3))
					b.WriteString("</strong> ")
				case 3:
					b.WriteString("<em>")
					x.text(1 + r.IntN(3))
					b.WriteString("</em> ")
				}
			}
			b.WriteString("</p>\n</div></div>\n")
			if r.IntN(3) == 0 {
				b.WriteString(share)
			}
		}
		switch r.IntN(4) {
		case 0:
			x.table()
		case 1:
			b.WriteString("<ul class=\"list\">\n")
			for k := 2 + r.IntN(6); k > 0; k-- {
				b.WriteString("<li>")
				x.text(3 + r.IntN(10))
				b.WriteString("</li>\n")
			}
			b.WriteString("</ul>\n")
		case 2:
			x.cards(&i, links, w)
		}
		b.WriteString("</section>\n")
	}
	b.WriteString("</article>\n")
	// The links left (most of the off-site ones) go in a list of related reading.
	b.WriteString("<aside class=\"related\">\n<h3>Related</h3>\n<ul>\n")
	for u, ok := next(); ok; u, ok = next() {
		fmt.Fprintf(b, "<li><a href=\"%s\" rel=\"noopener\">", u)
		x.text(2 + r.IntN(6))
		b.WriteString("</a></li>\n")
	}
	b.WriteString("</ul>\n</aside>\n</main>\n<footer class=\"site-footer\">\n<p>")
	x.text(15 + r.IntN(20))
	fmt.Fprintf(b, "</p>\n<p class=\"copyright\">&copy; 20%02d %s. All rights reserved.</p>\n</footer>\n", 10+r.IntN(16), site)
	fmt.Fprintf(b, "<script type=\"application/ld+json\">{\"@context\":\"https://schema.org\",\"@type\":\"Article\",\"headline\":\"%s\",\"url\":\"%s\",\"wordCount\":%d}</script>\n",
		title, self, b.Len()/7)
	b.WriteString("</body>\n</html>\n")
	return []byte(b.String())
}

// share is the row of share buttons that a site repeats under its paragraphs.
const share = `<div class="share-buttons" aria-label="Share"><button class="share-button share-button--facebook" type="button" data-network="facebook"><svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path d="M22 12a10 10 0 1 0-11.6 9.9v-7H7.9V12h2.5V9.8c0-2.5 1.5-3.9 3.8-3.9 1.1 0 2.2.2 2.2.2v2.5h-1.3c-1.2 0-1.6.8-1.6 1.6V12h2.8l-.4 2.9h-2.3v7A10 10 0 0 0 22 12z"/></svg></button><button class="share-button share-button--twitter" type="button" data-network="twitter"><svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path d="M18.2 2.3h3.3l-7.2 8.3 8.5 11.2h-6.7l-5.2-6.8-6 6.8H1.7l7.7-8.8L1.3 2.3H8l4.7 6.2 5.5-6.2z"/></svg></button><button class="share-button share-button--email" type="button" data-network="email"><svg class="icon" viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path d="M20 4H4a2 2 0 0 0-2 2v12a2 2 0 0 0 2 2h16a2 2 0 0 0 2-2V6a2 2 0 0 0-2-2zm0 4-8 5-8-5V6l8 5 8-5v2z"/></svg></button></div>
`

// palette is a site's colours.
var palette = []string{"#fff", "#000", "#333", "#666", "#999", "#f5f5f5", "#e0e0e0", "#1a73e8", "#d93025", "#188038", "#f9ab00", "#202124"}

// style writes an inline style sheet of n rules.
func (x *writer) style(n int) {
	r, b := x.r, &x.b
	props := []string{"margin", "padding", "color", "background-color", "font-size", "line-height", "border", "display", "width", "max-width",
		"font-weight", "text-align", "border-radius", "box-shadow", "transition", "grid-template-columns", "gap", "opacity"}
	b.WriteString("<style>\n")
	for ; n > 0; n-- {
		fmt.Fprintf(b, ".%s-%s", word(r.IntN(300)), word(r.IntN(300)))
		if r.IntN(3) == 0 {
			fmt.Fprintf(b, " > .%s:hover", word(r.IntN(300)))
		}
		b.WriteString("{")
		for k := 2 + r.IntN(5); k > 0; k-- {
			switch prop := props[r.IntN(len(props))]; prop {
			case "color", "background-color":
				fmt.Fprintf(b, "%s:%s;", prop, palette[r.IntN(len(palette))])
			case "display":
				fmt.Fprintf(b, "%s:%s;", prop, []string{"flex", "block", "grid", "none", "inline-block"}[r.IntN(5)])
			default:
				fmt.Fprintf(b, "%s:%dpx %dpx;", prop, 4*r.IntN(8), 4*r.IntN(4))
			}
		}
		b.WriteString("}\n")
	}
	b.WriteString("</style>\n")
}

// script writes an inline script of n statements.
func (x *writer) script(n int) {
	r, b := x.r, &x.b
	fmt.Fprintf(b, "<script>\n(function(w,d){\"use strict\";var cfg={site:\"%s\",id:%d,ab:[%d,%d,%d],debug:%t};\n",
		word(r.IntN(900)), r.IntN(1<<30), r.IntN(100), r.IntN(100), r.IntN(100), r.IntN(2) == 0)
	for ; n > 0; n-- {
		a, c := word(r.IntN(400)), word(r.IntN(400))
		switch r.IntN(4) {
		case 0:
			fmt.Fprintf(b, "function %s%s(e,t){if(!e)return t||null;var n=e.%s||%d;return n>%d?e.%s(n):t}\n", a, strings.ToUpper(c[:1])+c[1:], c, r.IntN(1000), r.IntN(100), a)
		case 1:
			fmt.Fprintf(b, "d.querySelectorAll(\".%s-%s\").forEach(function(el){el.addEventListener(\"%s\",function(){el.classList.toggle(\"is-%s\")})});\n",
				a, c, []string{"click", "mouseover", "focus", "scroll"}[r.IntN(4)], word(r.IntN(100)))
		case 2:
			fmt.Fprintf(b, "w.%s=w.%s||[];w.%s.push({event:\"%s\",value:%d,ts:%d});\n", a, a, a, c, r.IntN(10000), 1_700_000_000+r.IntN(100_000_000))
		default:
			fmt.Fprintf(b, "var %s=\"%s\",%s=%d.%d;\n", a, c, c, r.IntN(1000), r.IntN(1000))
		}
	}
	b.WriteString("})(window,document);\n</script>\n")
}

// table writes a table of words and figures.
func (x *writer) table() {
	r, b := x.r, &x.b
	cols := 3 + r.IntN(4)
	fmt.Fprintf(b, "<table class=\"data-table %s\">\n<thead><tr>", word(r.IntN(50)))
	for c := 0; c < cols; c++ {
		b.WriteString("<th scope=\"col\">")
		x.text(1 + r.IntN(2))
		b.WriteString("</th>")
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for row := 3 + r.IntN(12); row > 0; row-- {
		b.WriteString("<tr>")
		for c := 0; c < cols; c++ {
			switch {
			case c == 0:
				b.WriteString("<td>")
				x.text(1 + r.IntN(3))
				b.WriteString("</td>")
			case r.IntN(2) == 0:
				fmt.Fprintf(b, "<td class=\"num\">%d</td>", r.IntN(100_000))
			default:
				fmt.Fprintf(b, "<td class=\"num\">%d.%02d%%</td>", r.IntN(100), r.IntN(100))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
}

// cards writes a row of cards with images and data attributes, each with one of the page's links
// while it has any left.
func (x *writer) cards(i *int, links []Link, w *Web) {
	r, b := x.r, &x.b
	b.WriteString("<div class=\"card-grid\">\n")
	for k := 2 + r.IntN(4); k > 0; k-- {
		id := r.IntN(1_000_000)
		fmt.Fprintf(b, "<div class=\"card card-%s\" data-id=\"%d\" data-track=\"%s_%s\">\n<img src=\"/media/%d/%s.jpg\" alt=\"",
			word(r.IntN(20)), id, word(r.IntN(100)), word(r.IntN(100)), id%1000, word(r.IntN(3000)))
		x.text(2 + r.IntN(5))
		fmt.Fprintf(b, "\" loading=\"lazy\" width=\"%d\" height=\"%d\">\n<h4>", 200+r.IntN(400), 150+r.IntN(300))
		x.text(2 + r.IntN(4))
		b.WriteString("</h4>\n<p>")
		x.text(8 + r.IntN(20))
		b.WriteString("</p>\n")
		if *i < len(links) {
			fmt.Fprintf(b, "<a class=\"card-link\" href=\"%s\">Read more</a>\n", w.href(links[*i]))
			*i++
		}
		b.WriteString("</div>\n")
	}
	b.WriteString("</div>\n")
}
