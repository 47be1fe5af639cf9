// Package finish announces a crawl's end, once: a "Crawl Finished" event with its counts and
// cost, put on EventBridge's default bus by the stack (package eventbus) and written beside the
// crawl's seed report by `crawl run`. A crawl whose work stops moving with work left is announced
// "Crawl Stalled", once, and its checks stop. The checks also renew the items of a crawl that
// runs longer than its items' retention (renew, crawlstate.Runs.Renew).
//
// When a crawl has drained is not something one handler can see: the last URL ends before its
// page is parsed and its links are admitted, and the queues are shared by every crawl. So a crawl
// has a chain of drain checks, messages on the schedule queue (message.Check), one every Every:
// Begin sends the first when the crawl starts, and each check that finds work left sends the next.
// A check finds the crawl drained when
//
//  1. it is not paused;
//  2. an exact tally of its items (crawlstate.Drained) finds no URL left to end, no fetched page
//     left to parse, and no Links message left to admit: every Links message sent is named, by
//     the parse mark of the message that sent it or by a note of schedule's (a seed file's) or
//     the CLI's, and schedule marks each admitted once its URLs are admitted or refused and their
//     fetch messages sent. A Links message that failed, however often, is still named and not
//     admitted, and keeps the crawl from its end: one in the schedule queue's dead-letter queue
//     keeps it until it is moved back (DESIGN invariant 11).
//
// The tally reads every item of the crawl, so a check does not tally while the crawl's end's
// counters (crawlstate/endcount.go: URLs admitted and ended, pages stored and parsed, Links
// messages named and admitted, counted beside the writes that make them) show work left: it reads
// the counter shards alone, a few reads. When they show none, it tallies once to confirm. A tally
// that disagrees (the counters drifted: a store that died with counts unwritten, a mark counted
// twice) is logged at warn with both counts, and the checks go on; they tally again only once the
// counters move or another Quiet has passed. Counters still with work left for Quiet are tallied
// too (counters that drifted high); a tally that then finds the crawl drained decides its end only
// once a second tally, a Quiet later with the counters unchanged, finds it drained again: a tally
// is no snapshot, and one that read a partition before an admission wrote its URL items and
// another after it wrote its admitted mark finds the crawl drained with the URLs unseen.
//
// A large crawl's tally does not fit one check: the schedule function has 60 s, and a crawl of a
// million URLs took 248 s to tally on DynamoDB Local. So each check takes the tally a step
// (crawlstate.DrainedStep): it reads for TallyBudget (DefaultTallyBudget, 20 s, beside
// RenewBudget's 20 s), from where the step before stopped, mid-partition too, and saves what it
// counted for the next check, which it sends as it sends any. A check decides nothing from a
// tally that has not completed: the end (or the stall) is decided only at the check whose step
// reads the last item. The steps are given the fingerprint of the crawl's end's counters, and a
// step whose fingerprint is not the one the tally began with drops the saved tally and starts again
// from the first item; a check that does not go on with the tally (the crawl paused, or its
// counters moved and show work left) drops it. So a tally in steps is a tally of a crawl whose
// end's counters did not move from its first step to its last, and a saved tally that cannot be
// read (logged at warn) is started again, never guessed at.
//
// Why that is as safe as the tally in one invocation it replaces. That tally was no snapshot
// either: it read the 64 partitions over seconds to minutes, while the crawl's handlers wrote, and
// an item written behind its reads was not seen. What made it safe is that the counters move
// beside every write that makes work or ends it: an admission (a URL item), an end (an outcome), a
// stored page, a parse mark, a Links message named or admitted. A check decides the end from a
// tally only while its counters show nothing left, or stood still for Quiet, and the next check
// sees any counter that moved during the tally. A tally in steps keeps that, and more: any such
// write between its first step and its last moves the fingerprint, and the tally starts again, so
// the tally that completes read a crawl in which nothing counted happened for the whole of its
// reads (a write whose counter is not yet written, or lost, is the drift that the one-go tally
// could not see either, and that the quiet time and the stall cover as before). Its state is the
// same counts and sets the one-go tally held in memory, saved whole or not at all (its head, on
// the crawl item, names one complete set of chunks by their digest), and each step reads every
// partition from exactly after the last item the step before counted, so the items it counts are
// those the one-go tally would have: each once.
//
// A crawl whose counters have not moved for StallAfter (DefaultStallAfter, an hour of checks) with
// work left is stalled: a URL that cannot end, or a message in a dead-letter queue. The check
// tallies once more (counters that drifted high end the crawl here, late), and if work is left it
// decides the stall (crawlstate.StepCheck, one conditional write, as an end is decided), puts a
// "Crawl Stalled" event that names the work left and the dead-letter queues likely to hold it,
// counts the metric crawl.stalls (the stack's CrawlStalled alarm), and sends no next check. A
// later check takes the chain on at its seq and clears the stall: Resume sends one (`crawl
// resume`, after the messages were moved back with `crawl redrive`), and so does Begin (a seed
// file of the crawl read again). A stall, like an end, gives the crawl item and its counter shards
// a time to live: the decision plus the crawl's retention.
//
// A crawl started before the end's counters existed has none (crawlstate.Checks.Counted): its
// checks tally once its counters of URLs have not changed for Quiet, and have changed since the
// last tally or another Quiet has passed, as they did before; it never stalls. Parse marks written
// before marks named their Links messages name none: for those, the quiet time is the only wait,
// which covers one failed delivery of a Links message when Quiet is longer than the schedule
// queue's visibility timeout (docs/operating.md).
//
// A paused crawl is neither tallied nor stalled, and its checks back off: each waits twice as long
// as the one before, up to queue.MaxDelay. Resume brings the pace back to Every.
//
// Exactly once: the crawl item holds the chain's seq and the end (crawlstate.StepCheck). A check
// whose seq the chain has passed (a duplicate delivery) does nothing. The end is decided by one
// conditional write that stores the event with it (pending), then the event is put, then the end
// is marked announced. A check that dies after the decision is delivered again and puts the same
// stored event. EventBridge has no deduplication, so a check that dies after the put and before
// the mark puts the event a second time: the event is sent at least once and decided exactly once,
// and every copy carries the same EventID for a consumer to key on. A copy of the deciding check
// (or the deciding check moved back from its dead-letter queue, under a new id) announces a pending
// end only once it has been pending for Quiet, after taking it over with a conditional write. A
// stall is decided and announced the same way, by the stalling check and its redeliveries (not
// taken over by copies: a stall left pending shows in crawl status).
package finish
