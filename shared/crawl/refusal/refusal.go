// Package refusal is the event of a seed file that starts no crawl: a crawl spec with errors (a
// bad value, a value over the stack's bounds), a seed file over the size limit, or a URL list
// with no good line. Schedule writes the seed report (crawls/<crawl>/seeds.json) and then puts
// this event, so that a refusal on AWS is seen where the end of a crawl is: on the event bus.
package refusal

import (
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/finish"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"
)

// The event's envelope: the crawler's source, and its own detail-type.
const (
	Source     = finish.Source
	DetailType = "Seed File Refused"
)

// MaxReasons is how many of a refusal's errors the event carries; the seed report has the rest.
const MaxReasons = 10

// Reason is one error of a refused seed file: its line (0: the file as a whole) and what is wrong.
type Reason struct {
	Line  int    `json:"line,omitempty"`
	Error string `json:"error"`
}

// Event is the detail of a "Seed File Refused" event.
type Event struct {
	// EventID is the same for every copy of one crawl's refusal ("crawlstack:<crawl>:refused"): a
	// redelivered seed message puts the event again, and a consumer that must act once keys on it.
	EventID  string `json:"eventId"`
	Crawl    string `json:"crawl"`
	SeedFile string `json:"seedFile"`
	// Spec is set when the seed file is a crawl spec.
	Spec      bool      `json:"spec"`
	RefusedAt time.Time `json:"refusedAt"`
	// Errors counts every error; Reasons are the first MaxReasons of them.
	Errors  int      `json:"errors"`
	Reasons []Reason `json:"reasons"`
	// Report is the key of the seed report, which lists them all.
	Report string `json:"report"`
}

// EventID is the id of crawl's refusal.
func EventID(crawl string) string { return Source + ":" + crawl + ":refused" }

// New is the event of crawl's refused seed file, with the first MaxReasons of reasons.
func New(crawl, seedFile string, spec bool, at time.Time, errors int, reasons []Reason) Event {
	if len(reasons) > MaxReasons {
		reasons = reasons[:MaxReasons]
	}
	if reasons == nil {
		reasons = []Reason{}
	}
	return Event{EventID: EventID(crawl), Crawl: crawl, SeedFile: seedFile, Spec: spec, RefusedAt: at.UTC(),
		Errors: errors, Reasons: reasons, Report: layout.SeedReport(crawl)}
}
