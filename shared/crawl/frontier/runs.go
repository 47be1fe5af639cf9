package frontier

import "time"

// Runs of URLs for polite hosts. A host that its politeness holds to a request every
// RunMinInterval or more gets its URLs of a schedule batch in runs: one group, and so one fetch
// message, holds up to RunURLs of them, instead of one URL of each host. Send books no slot for a
// run and sends it at once: its fetcher books the run's slots as it starts it, in one write from
// the host's next free slot, so that a run that waited in the queue past its slots (the lane's
// invocations each live as long as their longest run) loses none. The fetcher claims a run's URLs
// in one write, fetches them one after another, waiting in place for each slot, records their outcomes in one write and stores their pages in one WARC file with one parse
// message (shared/handler/fetcher/runs.go). At one page a second, a message, a claim, an outcome
// write, a WARC PUT and a parse invocation then serve a run of pages instead of one page each
// (docs/cost.md, "Runs of URLs for polite hosts").

// DefaultRunURLs is the run length to set (Config.RunURLs; runs are off unless set: the stack's
// runUrls=10 sets it and makes the slow lane, Config.SlowQueue, which takes the runs): ten seconds
// of a host at a page a second. Runs of up to 30 measured dearer than runs of 10 while schedule
// booked a run's slots; since the fetcher books them, the two measured about the same, a batch's
// runs of one host joining into one (docs/cost.md, "Runs booked by their fetcher"). The fetcher claims and records a longer run's URLs on their group's item in
// writes of at most ten (crawlstate.ClaimGroup, Record), each condition well inside DynamoDB's
// 4 KB for an expression.
const DefaultRunURLs = 10

// DefaultRunMinInterval is the gap between a host's requests from which it gets runs: a host of
// at most a page a second. A faster host fills messages of one URL of each host well enough, and
// its waits in place are short.
const DefaultRunMinInterval = time.Second

// DefaultRunSpan bounds a run's time from its first slot to its last, so that a run fits in a
// fetch invocation well inside its timeout and its claim's lease, however slow the host.
const DefaultRunSpan = 30 * time.Second

// runLength is how many URLs of a host at interval one run holds: 0 or 1 is none.
func (f *Frontier) runLength(interval time.Duration) int {
	if interval < f.cfg.RunMinInterval || f.cfg.RunURLs < 2 {
		return 0
	}
	return min(f.cfg.RunURLs, int(f.cfg.RunSpan/interval)+1)
}
