package cli

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/crawlstack/crawlstack/shared/errclass"
	"github.com/crawlstack/crawlstack/shared/seeds"
)

// maxBadSeedsShown is how many bad seed lines a run reports one by one; the rest are counted.
const maxBadSeedsShown = 20

// reportBadSeeds says which lines of the seed file are skipped and why: the first
// maxBadSeedsShown one a line, then how many more.
func reportBadSeeds(w io.Writer, file string, bad []seeds.LineError) {
	for i, le := range bad {
		if i == maxBadSeedsShown {
			fmt.Fprintf(w, "crawl: %s: %d more bad lines skipped (%d in all)\n", file, len(bad)-i, len(bad))
			return
		}
		fmt.Fprintf(w, "crawl: %s line %d: skipped %q: %s\n", file, le.Line, le.Text, seedProblem(le))
	}
}

// normalizePrefix starts the URL normaliser's messages, which repeat the line's text.
var normalizePrefix = regexp.MustCompile(`^(normalize|resolve) ("[^"]*"|url): (parse: )?`)

// seedProblem is why a seed line is bad, in one sentence: without the error class and the
// normaliser's repetition of the text the report shows already, and with the scheme a bare host
// name lacks.
func seedProblem(le seeds.LineError) string {
	msg := le.Err.Error()
	var ce *errclass.Error
	if errors.As(le.Err, &ce) {
		msg = ce.Err.Error()
	}
	msg = normalizePrefix.ReplaceAllString(msg, "")
	if msg == "not an absolute url" && looksLikeHost(le.Text) {
		return fmt.Sprintf("no scheme: write https://%s (or http://)", le.Text)
	}
	return msg
}

// looksLikeHost is whether text is a host name (and path) written without a scheme:
// "www.example.com", "example.com/docs".
func looksLikeHost(text string) bool {
	host, _, _ := strings.Cut(text, "/")
	return strings.Contains(host, ".") && !strings.ContainsAny(text, " \t") && !strings.Contains(text, "://")
}
