package frontier

import (
	"encoding/binary"
	"hash/maphash"
)

// The frontier's memory of the URLs the table confirmed as known: the Bloom filter of their keys,
// and in front of it the exact set of the most recent ones (see the package comment).

// seen reports whether the Bloom filter may hold the crawl's key (no false negatives).
func (f *Frontier) seen(crawl, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.known.TestString(crawl + "#" + key)
}

// recentlyConfirmed reports whether u is the normalised form of a URL the table confirmed a
// moment ago. Admit asks with each link as sent: parse sends links normalised, so most are known
// without normalising and hashing them again.
func (f *Frontier) recentlyConfirmed(crawl, u string) bool {
	return f.recent.Contains(f.recentKey(crawl, u))
}

// recentKey is the key of a crawl's URL in the set of recently confirmed URLs: two 64-bit hashes
// of it with seeds of their own, drawn at random for this process. Two of n URLs share a key with
// odds of about n²/2¹²⁹, so the set is exact for any crawl; and a 16-byte key, not the URL, keeps
// each entry near 70 bytes with no pointer in it (the URL as a key cost about 220, a fifth of a
// 100,000-page crawl's heap).
func (f *Frontier) recentKey(crawl, u string) recentKey {
	var k recentKey
	for i, seed := range f.seeds {
		var h maphash.Hash
		h.SetSeed(seed)
		h.WriteString(crawl)
		h.WriteByte('#')
		h.WriteString(u)
		binary.LittleEndian.PutUint64(k[8*i:], h.Sum64())
	}
	return k
}

// recentKey: see Frontier.recentKey.
type recentKey [16]byte

// Forget drops the URL (as normalised) from the frontier's memory of URLs the table confirmed: one
// whose item was taken away (crawlstate.Reopen) must be asked of the table again when it comes back.
// The Bloom filter keeps it, and only sends the look to the table.
func (f *Frontier) Forget(crawl, normalized string) {
	f.recent.Remove(f.recentKey(crawl, normalized))
}

// remember records a URL the table confirmed as known: its key in the Bloom filter, and its
// normalised form in the exact set of recent URLs.
func (f *Frontier) remember(crawl, key, normalized string) {
	f.recent.Add(f.recentKey(crawl, normalized))
	k := crawl + "#" + key
	f.mu.Lock()
	defer f.mu.Unlock()
	f.known.AddString(k)
}
