package pipeline

import "fmt"

// The defaults of a deployed stack (infra/crawlstack.DefaultConfig) where they are not
// DefaultConfig's: a crawl on AWS costs money, so the stack caps a crawl's pages, and builds one
// CDXJ index per crawl instead of one beside each WARC file (a PUT fewer per fetch batch). Every
// other setting a crawl has is the same in both (TestTheStackHasTheCLIsDefaults holds the stack's
// template to them).
const (
	StackMaxPages  = 1000
	StackWARCIndex = IndexPerCrawl
)

// UnlikeTheStack says, one phrase each, where c differs from a deployed stack's defaults in the
// settings whose defaults differ (StackMaxPages, StackWARCIndex): `crawl run` says so when a crawl
// starts, so that the same seed file is not crawled differently after a deploy by surprise.
func (c Config) UnlikeTheStack() []string {
	var d []string
	if c.MaxPages != StackMaxPages {
		here := "no page cap"
		if c.MaxPages > 0 {
			here = fmt.Sprintf("at most %d pages", c.MaxPages)
		}
		d = append(d, fmt.Sprintf("%s here, where the stack caps a crawl at %d pages (maxPages)", here, StackMaxPages))
	}
	if c.WARCIndex != StackWARCIndex {
		d = append(d, "a CDXJ index beside each WARC file here, where the stack leaves it to crawl index (warcIndex)")
	}
	return d
}
