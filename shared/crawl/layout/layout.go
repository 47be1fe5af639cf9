// Package layout is where everything of a crawl lives in the bucket: one home for every prefix and
// object key that the handlers, the CLI and the admin tools share. The state table's key layout
// lives in one place too, shared/crawl/crawlstate (keys.go).
//
//	seeds/<file>                                  seed files and crawl specs dropped by users
//	crawls/<crawl>/seeds.json                     the seed report (what schedule admitted or refused)
//	crawls/<crawl>/spec.json                      the settings of a crawl a spec started
//	crawls/<crawl>/finished.json                  the end event, where no event bus takes it
//	crawls/<crawl>/refusal-flags.json             `crawl reconsider`'s flags
//	crawls/latest/<hash>.json                     each seed file's pointer to its last crawl
//	pages/<crawl>/<yyyy>/<mm>/<dd>/<batch>.warc.gz the fetched pages, with a .cdxj index beside
//	records/crawl=<crawl>/dt=<yyyy-mm-dd>/...     the structured records parse writes
//	indexes/<crawl>.cdxj                          a crawl's merged CDXJ index
//	quarantine/<source>/<yyyy-mm-dd>/<id>.json    poison messages
//	audit/purge/<time>-<target>.json              the audit records of erasures
package layout

// The bucket's top-level prefixes.
const (
	Seeds      = "seeds/"
	Crawls     = "crawls/"
	Latest     = Crawls + "latest/"
	Pages      = "pages/"
	Records    = "records/"
	Indexes    = "indexes/"
	Quarantine = "quarantine/"
	Audit      = "audit/purge/"
)

// CrawlDir is the folder of one crawl's reports and settings.
func CrawlDir(crawl string) string { return Crawls + crawl + "/" }

// SeedReport is where schedule writes the report of the seeds that started crawl.
func SeedReport(crawl string) string { return CrawlDir(crawl) + "seeds.json" }

// Spec is where the settings of a crawl that a spec started are kept.
func Spec(crawl string) string { return CrawlDir(crawl) + "spec.json" }

// Finished is where a crawl's end event is written when it goes to the bucket.
func Finished(crawl string) string { return CrawlDir(crawl) + "finished.json" }

// RefusalFlags is where `crawl reconsider` keeps the flags a crawl's refusals were made under.
func RefusalFlags(crawl string) string { return CrawlDir(crawl) + "refusal-flags.json" }

// PagesDir is the folder of one crawl's WARC files.
func PagesDir(crawl string) string { return Pages + crawl + "/" }

// RecordsDir is the folder of one crawl's records, partitioned by day under it.
func RecordsDir(crawl string) string { return Records + "crawl=" + crawl + "/" }

// RecordsCrawls is the prefix under which each crawl's records folder starts (records/crawl=).
const RecordsCrawls = Records + "crawl="
