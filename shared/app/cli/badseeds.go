package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/seeds"
)

// readSeeds checks the seed file before anything is created: a crawl spec must have no problem
// at all (each is printed with its line, and the run stops), a URL list's bad lines are printed
// and skipped. It returns the good and bad seed counts.
func readSeeds(o RunOptions, body []byte, stderr io.Writer) (good, bad, code int) {
	if crawlspec.IsSpec(o.SeedFile, body) {
		spec, err := crawlspec.Parse(body, o.config(Resources{}).SpecBounds())
		var es crawlspec.Errors
		if errors.As(err, &es) {
			for _, e := range es {
				fmt.Fprintf(stderr, "crawl: %s: %v\n", o.SeedFile, e)
			}
			fmt.Fprintf(stderr, "crawl: %s: %d problem(s) in the crawl spec (docs/spec.md): nothing crawled\n", o.SeedFile, len(es))
			return 0, 0, ExitUsage
		}
		return len(spec.Seeds), 0, ExitOK
	}
	seedsOK, lines, err := seeds.Parse(bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "crawl: reading %s: %v\n", o.SeedFile, err)
		return 0, 0, ExitUsage
	}
	reportBadSeeds(stderr, o.SeedFile, lines)
	return len(seedsOK), len(lines), ExitOK
}

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
// normaliser's repetition of the text the report shows already (a line with no scheme says how to
// write it: package seeds).
func seedProblem(le seeds.LineError) string {
	msg := le.Err.Error()
	var ce *errclass.Error
	if errors.As(le.Err, &ce) {
		msg = ce.Err.Error()
	}
	return normalizePrefix.ReplaceAllString(msg, "")
}
