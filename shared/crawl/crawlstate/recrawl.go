package crawlstate

import "strings"

// What a recrawl needs of a fetched page (Page's ETag, LastModified, Digest and Unchanged) rides
// in its outcome (outcomes.go), the digest without its "sha256:" prefix.

const digestPrefix = "sha256:"

func storeRecrawl(st *stored, p *Page) {
	st.E, st.LM, st.UN = p.ETag, p.LastModified, p.Unchanged
	st.G = strings.TrimPrefix(p.Digest, digestPrefix)
}

func loadRecrawl(p *Page, st stored) {
	p.ETag, p.LastModified, p.Unchanged = st.E, st.LM, st.UN
	if st.G != "" {
		p.Digest = digestPrefix + st.G
	}
}
