package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/optout"
	"github.com/crawlstack/crawlstack/shared/ops/purge"
)

// purgeHelp is what `crawl purge --help` says besides its usage and flags.
var purgeHelp = cmdHelp{
	about: "Erase what the crawls stored of a site (--host) or a page (--url): its URLs' table items, its WARC records\n" +
		"(files shared with other pages are rewritten without them, and the indexes follow) and its records. It puts\n" +
		"the host or URL on the opt-out list first, so that no crawl fetches it again, and stores an audit record of\n" +
		"what it deleted, when and why under audit/purge/. --dry-run lists what would go and changes nothing.\n" +
		"The GDPR/CCPA erasure procedure: docs/erasure.md.",
	examples: "crawl purge --dry-run --url https://example.org/people/jane\n" +
		"crawl purge --url https://example.org/people/jane --reason \"erasure request of 2026-12-01, ticket 123\"\n" +
		"crawl purge --backend aws --host example.com --crawl seeds-3e53e0c6c911 --reason \"owner's request\"",
}

// purgeArgs are the arguments of `crawl purge`.
const purgeArgs = "(--host H | --url URL) [--crawl CRAWL]... --reason TEXT [--dry-run] [--json]"

// purgeCmd is `crawl purge`.
func purgeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var host, rawURL, reason string
	var crawls []string
	var dryRun, asJSON bool
	o, rest, err := adminFlags("purge", purgeArgs, args, &asJSON, func(fs *flag.FlagSet) {
		fs.StringVar(&host, "host", "", "a host: it and every host under it")
		fs.StringVar(&rawURL, "url", "", "one URL")
		fs.Func("crawl", "only this crawl (again for more; default: every crawl)", func(s string) error {
			if s == "" || strings.ContainsAny(s, "/#") {
				return fmt.Errorf("%q: want a crawl's id, as crawl status lists them", s)
			}
			crawls = append(crawls, s)
			return nil
		})
		fs.StringVar(&reason, "reason", "", "why, for the audit record and the tombstone (an erasure request, a ticket)")
		fs.BoolVar(&dryRun, "dry-run", false, "list what would be deleted, and change nothing")
	})
	if err != nil {
		return usageError(stdout, stderr, "purge", err)
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "crawl purge: unexpected arguments %q: name what to purge with --host or --url\n", rest)
		return ExitUsage
	}
	if (host == "") == (rawURL == "") {
		fmt.Fprintln(stderr, "crawl purge: want exactly one of --host and --url")
		return ExitUsage
	}
	kind, value := optout.Host, host
	if rawURL != "" {
		kind, value = optout.URL, rawURL
	}
	target, err := optout.NewEntry(kind, value, reason, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "crawl purge: --%s: %v\n", kind, err)
		return ExitUsage
	}
	if strings.TrimSpace(reason) == "" && !dryRun {
		fmt.Fprintln(stderr, "crawl purge: want --reason TEXT: why, for the audit record (an erasure request, a ticket)")
		return ExitUsage
	}
	be, err := openExisting(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "crawl purge: %v\n", err)
		return ExitFailed
	}
	defer be.Close()
	if o.Backend == "embedded" && !dryRun {
		// A run working on the directory would fetch on until its handlers see the tombstone,
		// and its parse handler reads pages at offsets the purge moves.
		unlock, err := lockState(o.State)
		if err != nil {
			fmt.Fprintf(stderr, "crawl purge: %v\n", err)
			return ExitFailed
		}
		defer unlock()
	}
	p := purge.Purger{T: be.Table, B: be.Blobs, DryRun: dryRun,
		Progress: func(line string) { fmt.Fprintf(stderr, "crawl purge: %s\n", line) }}
	if o.Backend == "aws" {
		p.Kept = []string{purge.PITRKept}
	}
	rep, err := p.Purge(ctx, purge.Request{Target: target, Reason: reason, Crawls: crawls})
	if err == nil && !dryRun && be.Compact != nil {
		fmt.Fprintln(stderr, "crawl purge: compacting the state file, so that no deleted row is left in it")
		if err = be.Compact(ctx); err != nil {
			err = fmt.Errorf("the purge is done, but %w (run crawl purge again when no crawl runs on the state directory)", err)
		}
	}
	if asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		printPurge(stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(stderr, "crawl purge: %v\n", err)
		if !dryRun {
			fmt.Fprintln(stderr, "crawl purge: what was done is done; run the same command again to finish")
		}
		return ExitFailed
	}
	return ExitOK
}

// printPurge says what a purge did, or would do.
func printPurge(w io.Writer, rep purge.Report) {
	t := rep.Totals()
	verb := "purged"
	if rep.DryRun {
		verb = "would purge"
	}
	fmt.Fprintf(w, "%s %s %s in %d crawls:\n", verb, rep.Target.Kind, rep.Target.Value, len(rep.Crawls))
	fmt.Fprintf(w, "  table:    %d URL items\n", len(t.URLs))
	fmt.Fprintf(w, "  WARC:     %d records; %d files rewritten, %d deleted; %d other pages moved\n",
		t.WARCRecords, len(t.WARCFilesRewritten), len(t.WARCFilesDeleted), t.PagesMoved)
	fmt.Fprintf(w, "  records:  %d lines, %d links from other pages; %d files rewritten, %d deleted\n",
		t.RecordLines, t.OutLinks, len(t.RecordFilesRewritten), len(t.RecordFilesDeleted))
	if n := t.NoFollowLinks + t.Canonicals + t.DataValues; n > 0 {
		fmt.Fprintf(w, "            %d nofollow links, %d canonical URLs, %d data values of other pages\n", t.NoFollowLinks, t.Canonicals, t.DataValues)
	}
	if t.HostNotes > 0 || t.Budgets > 0 || t.CookieJars > 0 {
		fmt.Fprintf(w, "  hosts:    %d page budgets, %d throttling and circuit notes, %d cookie jars\n", t.Budgets, t.HostNotes, t.CookieJars)
	}
	for _, u := range t.URLs {
		fmt.Fprintf(w, "  url       %s\n", u)
	}
	for _, f := range append(t.WARCFilesRewritten, t.RecordFilesRewritten...) {
		fmt.Fprintf(w, "  rewrite   %s\n", f)
	}
	for _, f := range append(t.WARCFilesDeleted, t.RecordFilesDeleted...) {
		fmt.Fprintf(w, "  delete    %s\n", f)
	}
	for _, k := range t.IndexesRewritten {
		fmt.Fprintf(w, "  index     %s\n", k)
	}
	for _, u := range t.Unresolved {
		fmt.Fprintf(w, "  warning: the stored record of %s was not found again; crawl index and its offsets may need a look\n", u)
	}
	for _, k := range rep.StillNamedIn {
		fmt.Fprintf(w, "  still named in %s (not changed by a purge: docs/erasure.md)\n", k)
	}
	for _, k := range rep.Kept {
		fmt.Fprintf(w, "  kept in %s\n", k)
	}
	if rep.Tombstone != nil {
		fmt.Fprintf(w, "tombstone: %s %s is on the opt-out list (crawl optout list)\n", rep.Tombstone.Kind, rep.Tombstone.Value)
	}
	if rep.Audit != "" {
		fmt.Fprintf(w, "audit record: %s\n", rep.Audit)
	}
	if rep.DryRun {
		fmt.Fprintln(w, "dry run: nothing was changed")
	}
}
