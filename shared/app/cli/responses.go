package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/finish"
)

// printResponses writes the crawl's counts of responses (a summary's and a status's lines):
//
//	responses: 2xx 9 (200 9), 4xx 1 (404 1); 48213 body bytes
//	recrawl: 3 changed, 7 unchanged
//
// and nothing for a crawl that got no response.
func printResponses(w io.Writer, r finish.Responses) {
	if len(r.Statuses) > 0 || r.Bytes > 0 {
		fmt.Fprintf(w, "  responses: %s; %d body bytes\n", statusLine(r), r.Bytes)
	}
	if r.Changed+r.Unchanged > 0 {
		fmt.Fprintf(w, "  recrawl: %d changed, %d unchanged\n", r.Changed, r.Unchanged)
	}
}

// statusLine is the status counts by class, each with its codes, in order: "2xx 9 (200 8, 204 1)".
func statusLine(r finish.Responses) string {
	classes := make([]string, 0, len(r.StatusClasses))
	for c := range r.StatusClasses {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	codes := make([]string, 0, len(r.Statuses))
	for c := range r.Statuses {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	parts := make([]string, 0, len(classes))
	for _, class := range classes {
		var of []string
		for _, code := range codes {
			if code[:1] == class[:1] {
				of = append(of, fmt.Sprintf("%s %d", code, r.Statuses[code]))
			}
		}
		parts = append(parts, fmt.Sprintf("%s %d (%s)", class, r.StatusClasses[class], strings.Join(of, ", ")))
	}
	if len(parts) == 0 {
		return "none with a status"
	}
	return strings.Join(parts, ", ")
}
