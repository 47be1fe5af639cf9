package e2etest

import "regexp"

// internalText matches what a user should never be shown: the state table's keys (their kind
// letter and '#', as in k#1|crawl or c#crawl#3; shared/crawl/crawlstate keys.go) and the port's
// sentinel texts, which name no crawl, page or fix.
var internalText = regexp.MustCompile(`\b[a-z]#[^\s]*|item not found|ConditionalCheckFailed|condition failed`)

// InternalText returns the first internal text in out that a user would be shown, or "".
func InternalText(out string) string { return internalText.FindString(out) }

// UnknownCrawlCommands are the commands that name a crawl, each with a crawl that is not on
// record: a user's typo. Each must say that no such crawl is on record, in the user's words.
func UnknownCrawlCommands(crawl string) [][]string {
	return [][]string{
		{"status", crawl}, {"status", "--json", crawl}, {"failures", crawl}, {"failures", "--json", crawl},
		{"export", crawl}, {"index", crawl}, {"pause", crawl}, {"resume", crawl}, {"stop", crawl},
	}
}
