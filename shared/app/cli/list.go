package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/layout"
)

func init() { adminHelp["list"] = listHelp }

// listHelp is the help of `crawl list`.
var listHelp = cmdHelp{
	about:    "The crawls of a backend, newest first, with their state, start, counts and seed file; a seed file whose spec was refused is listed too, as refused, with its errors in its seed report.",
	examples: "crawl list\ncrawl list --stack Crawlstack\ncrawl list --json | jq -r '.[0].crawl'",
}

// listed is a crawl as `crawl list` shows it: its listing, and the seed file that started it (from
// its seed report, crawls/<crawl>/seeds.json).
type listed struct {
	CrawlListing
	SeedFile string `json:"seedFile,omitempty"`
	// Refused is how many errors refused its seed file (a spec that starts no crawl), and Reason
	// the first of them, as its seed report says it.
	Refused int    `json:"refusedErrors,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// seedReport is what `crawl list` reads of a seed report (scheduler.SeedReport).
type seedReport struct {
	Crawl    string    `json:"crawl"`
	SeedFile string    `json:"seedFile"`
	Errors   int       `json:"errors"`
	Spec     bool      `json:"spec"`
	ReadAt   time.Time `json:"readAt"`
	Bad      []struct {
		Error string `json:"error"`
	} `json:"bad"`
}

// reason is the first error of a refused seed file's report.
func (r seedReport) reason() string {
	if len(r.Bad) == 0 {
		return ""
	}
	return r.Bad[0].Error
}

// list is `crawl list`.
func list(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var asJSON bool
	o, rest, err := adminFlags("list", "", args, &asJSON)
	if err != nil {
		return usageError(stdout, stderr, "list", err)
	}
	if len(rest) != 0 {
		fmt.Fprintf(stderr, "crawl list: no arguments, got %d\n", len(rest))
		return ExitUsage
	}
	be, err := openExisting(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl list: %v\n", err)
		return ExitFailed
	}
	defer be.Close()
	out, err := listAll(ctx, crawlstate.New(be.Table), be)
	if err != nil {
		fmt.Fprintf(stderr, "crawl list: %v\n", err)
		return ExitFailed
	}
	printList(stdout, out, asJSON)
	return ExitOK
}

// listAll lists the crawls on record with their seed files, and the seed files refused, newest first.
func listAll(ctx context.Context, st *crawlstate.Store, be *Backend) ([]listed, error) {
	crawls, err := listCrawls(ctx, st, be)
	if err != nil {
		return nil, err
	}
	reports, err := seedReports(ctx, be)
	if err != nil {
		return nil, err
	}
	out := make([]listed, 0, len(crawls))
	for _, c := range crawls {
		l := listed{CrawlListing: c}
		if r, ok := reports[c.Crawl]; ok {
			l.SeedFile = r.SeedFile
			delete(reports, c.Crawl)
		}
		out = append(out, l)
	}
	for id, r := range reports {
		if r.Errors > 0 { // a seed file that started no crawl
			out = append(out, listed{CrawlListing: CrawlListing{Crawl: id, State: "refused", Started: r.ReadAt}, SeedFile: r.SeedFile,
				Refused: r.Errors, Reason: r.reason()})
		}
	}
	slices.SortStableFunc(out, func(a, b listed) int { return b.Started.Compare(a.Started) })
	return out, nil
}

// seedReports reads the seed reports of the backend's crawls, by crawl.
func seedReports(ctx context.Context, be *Backend) (map[string]seedReport, error) {
	keys, err := be.Blobs.List(ctx, "crawls/")
	if err != nil {
		return nil, fmt.Errorf("list the seed reports: %w", err)
	}
	out := map[string]seedReport{}
	for _, k := range keys {
		id := strings.TrimSuffix(strings.TrimPrefix(k, "crawls/"), "/seeds.json")
		if k != layout.SeedReport(id) {
			continue
		}
		b, err := be.Blobs.Get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("read the seed report %s: %w", k, err)
		}
		var r seedReport
		if err := json.Unmarshal(b, &r); err != nil {
			continue // not one of ours: the listing goes on without it
		}
		out[id] = r
	}
	return out, nil
}

// printList writes the list of crawls.
func printList(w io.Writer, list []listed, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(list)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "no crawls on record")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CRAWL\tSTATE\tSTARTED\tFETCHED\tPENDING\tSEED FILE")
	for _, c := range list {
		started := "-"
		if !c.Started.IsZero() {
			started = c.Started.UTC().Format(time.RFC3339)
		}
		seed := c.SeedFile
		if c.Refused > 0 {
			seed += " refused: " + c.Reason
			if c.Refused > 1 {
				seed += fmt.Sprintf(" (and %d more: %s)", c.Refused-1, layout.SeedReport(c.Crawl))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", c.Crawl, c.State, started, c.Fetched, c.Pending, seed)
	}
	tw.Flush()
}

// latest names the newest crawl in a command's CRAWL argument.
const latest = "latest"

// pickCrawl is the crawl a command about one crawl acts on: its argument, the newest crawl for
// "latest", or with no argument the one crawl on record (an error when there are several or none,
// naming the command that lists them).
func pickCrawl(ctx context.Context, st *crawlstate.Store, rest []string, h hints) (string, error) {
	if len(rest) == 1 && rest[0] != latest {
		return rest[0], nil
	}
	crawls, err := st.Crawls(ctx) // newest start first
	if err != nil {
		return "", err
	}
	switch {
	case len(crawls) == 0:
		return "", fmt.Errorf("no crawl on record")
	case len(rest) == 1 || len(crawls) == 1:
		return crawls[0].ID, nil
	}
	return "", fmt.Errorf("%d crawls on record: name one, or latest (%s lists them)", len(crawls), h.cmd("list"))
}
