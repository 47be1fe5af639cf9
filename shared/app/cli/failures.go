package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Failure is a URL of a crawl that ended without a page: failed, skipped or stopped.
type Failure struct {
	URL    string `json:"url"`
	State  string `json:"state"`
	Class  string `json:"class"`
	Detail string `json:"detail"`
	Depth  int    `json:"depth"`
}

// failures is `crawl failures CRAWL`: the crawl's failed, skipped and stopped URLs.
func failures(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var asJSON, asCSV bool
	var classes string
	o, rest, err := adminFlags("failures", "[--class a,b] [--json|--csv] CRAWL", args, &asJSON, func(fs *flag.FlagSet) {
		fs.BoolVar(&asCSV, "csv", false, "print CSV: url,state,class,detail,depth")
		fs.StringVar(&classes, "class", "", "only these error classes, comma-separated (http_5xx,timeout,...)")
	})
	if err != nil {
		return usageError(stdout, stderr, "failures", err)
	}
	if len(rest) > 1 {
		fmt.Fprintf(stderr, "crawl failures: want one CRAWL (or latest, or none when there is one; %s lists them), got %d arguments\n", hintsOf(o).cmd("list"), len(rest))
		return ExitUsage
	}
	if asJSON && asCSV {
		fmt.Fprintln(stderr, "crawl failures: --json or --csv, not both")
		return ExitUsage
	}
	only, err := parseClasses(classes)
	if err != nil {
		fmt.Fprintf(stderr, "crawl failures: %v\n", err)
		return ExitUsage
	}
	be, err := openExisting(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl failures: %v\n", err)
		return ExitFailed
	}
	defer be.Close()
	st := crawlstate.New(be.Table)
	crawl, err := pickCrawl(ctx, st, rest, hintsOf(o))
	if err != nil {
		fmt.Fprintf(stderr, "crawl failures: %v\n", err)
		return ExitFailed
	}
	list, err := listFailures(ctx, st, crawl, only)
	if err != nil {
		fmt.Fprintf(stderr, "crawl failures: %v\n", err)
		return ExitFailed
	}
	switch {
	case asJSON:
		enc := json.NewEncoder(stdout) // one object a line: a long list streams
		for _, f := range list {
			if err := enc.Encode(f); err != nil {
				return ExitFailed
			}
		}
	case asCSV:
		w := csv.NewWriter(stdout)
		w.Write([]string{"url", "state", "class", "detail", "depth"})
		for _, f := range list {
			w.Write([]string{f.URL, f.State, f.Class, f.Detail, strconv.Itoa(f.Depth)})
		}
		w.Flush()
		if w.Error() != nil {
			return ExitFailed
		}
	default:
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATE\tCLASS\tURL\tDETAIL")
		for _, f := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.State, f.Class, f.URL, f.Detail)
		}
		tw.Flush()
		fmt.Fprintf(stdout, "%d URLs without a page\n", len(list))
	}
	return ExitOK
}

// parseClasses reads --class; an unknown class is an error that names the known ones.
func parseClasses(v string) (map[errclass.Class]bool, error) {
	if v == "" {
		return nil, nil
	}
	known := map[errclass.Class]bool{}
	names := make([]string, len(errclass.All))
	for i, c := range errclass.All {
		known[c], names[i] = true, string(c)
	}
	only := map[errclass.Class]bool{}
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		if !known[errclass.Class(c)] {
			return nil, fmt.Errorf("--class: unknown class %q (the classes: %s)", c, strings.Join(names, ", "))
		}
		only[errclass.Class(c)] = true
	}
	return only, nil
}

// listFailures scans the crawl's URL items for those that ended without a page, in the classes
// only names (all when nil), sorted by class and URL. The scan reads the crawl's items (on
// DynamoDB: the whole table, filtered).
func listFailures(ctx context.Context, st *crawlstate.Store, crawl string, only map[errclass.Class]bool) ([]Failure, error) {
	if _, err := st.CrawlOf(ctx, crawl); errors.Is(err, table.ErrNotFound) {
		return nil, fmt.Errorf("no crawl %s on record (crawl list lists them)", crawl)
	} else if err != nil {
		return nil, fmt.Errorf("read crawl %s: %w", crawl, err)
	}
	var out []Failure
	err := st.EachURL(ctx, crawl, func(u crawlstate.URL) error {
		if u.State == crawlstate.Queued || u.State == crawlstate.Fetched {
			return nil
		}
		if only != nil && !only[u.Class] {
			return nil
		}
		out = append(out, Failure{URL: u.URL, State: string(u.State), Class: string(u.Class), Detail: u.Detail, Depth: u.Depth})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Class != out[j].Class {
			return out[i].Class < out[j].Class
		}
		return out[i].URL < out[j].URL
	})
	return out, nil
}
