// Package proxycorpus is a corpus of malformed proxy URLs, each holding the password Marker, for
// the tests that throw them at every parser of proxy settings (httpfetch.ParseProxy, the crawl
// command's flags, the functions' configuration; infra/crawlstack, a module of its own, reads
// bad-proxies.txt itself) and look for the password in everything those print.
package proxycorpus

import (
	_ "embed"
	"strconv"
	"strings"
	"testing"
)

// Marker is the password in every URL of the corpus.
const Marker = "PWMARK-s3cret"

//go:embed bad-proxies.txt
var corpus string

// Bad returns the corpus's URLs; it fails t on a line that is not a Go-quoted string.
func Bad(t testing.TB) []string {
	t.Helper()
	var out []string
	for i, line := range strings.Split(corpus, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := strconv.Unquote(line)
		if err != nil || !strings.Contains(s, Marker) {
			t.Fatalf("bad-proxies.txt line %d: want a Go-quoted URL holding %s (%v)", i+1, Marker, err)
		}
		out = append(out, s)
	}
	return out
}
