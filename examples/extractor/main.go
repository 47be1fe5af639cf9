// Command extractor is the crawl command with extraction code of its own: it registers a Go
// function as the extractor "reading_time", which a crawl spec then uses like any built-in field:
//
//	extract:
//	  minutes: {extractor: reading_time}
//
// Run it as you run crawl: `go run ./examples/extractor run spec.yaml` (the spec in this folder
// crawls a site of your own on loopback; see docs/spec.md). On AWS, register the extractor the
// same way in your own build of functions/schedule (which checks specs) and functions/parse
// (which extracts): import the package that registers it from their main packages.
package main

import (
	"context"
	"os"
	"strings"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/crawl/web/extract"
)

func init() {
	extract.Register("reading_time", extract.Func(readingTime))
}

// wordsPerMinute is an adult's silent reading speed.
const wordsPerMinute = 200

// readingTime is the minutes it takes to read the page's main text (its <article>, or its whole
// body when it has none), rounded up; nil for a page with no words, which the record shows as
// null.
func readingTime(p *extract.Page) (any, error) {
	text := p.Doc.Find("article").Text()
	if strings.TrimSpace(text) == "" {
		text = p.Doc.Find("body").Text()
	}
	words := len(strings.Fields(text))
	if words == 0 {
		return nil, nil
	}
	return (words + wordsPerMinute - 1) / wordsPerMinute, nil
}

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
