package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/optout"
)

// optoutHelp is what `crawl optout --help` says besides its usage and flags.
var optoutHelp = cmdHelp{
	about: "The opt-out list: hosts, URL prefixes, URL patterns and URLs that no crawl admits (they end skipped, class opted_out). " +
		"add puts an entry on it, remove takes it off, list shows it (docs/erasure.md).",
	examples: "crawl optout add --host example.com --reason \"owner's request of 2026-11-30\"\n" +
		"crawl optout add --prefix https://example.org/private/\n" +
		"crawl optout add --pattern '/users/[0-9]+/'\n" +
		"crawl optout remove --host example.com\n" +
		"crawl optout list --json",
}

// optoutCmd is `crawl optout add|remove|list`.
func optoutCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove" && args[0] != "list") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			_, _, err := optoutFlags("optout", args)
			return usageError(stdout, stderr, "optout", err)
		}
		fmt.Fprintln(stderr, "crawl optout: want add, remove or list (crawl optout --help)")
		return ExitUsage
	}
	verb := args[0]
	var asJSON bool
	var f optoutEntryFlags
	o, rest, err := adminFlags("optout", verb+optoutArgs, args[1:], &asJSON, f.add)
	if err != nil {
		return usageError(stdout, stderr, "optout", err)
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "crawl optout %s: unexpected arguments %q: name the entry with --host, --prefix, --pattern or --url\n", verb, rest)
		return ExitUsage
	}
	var e optout.Entry
	if verb != "list" {
		var given []optout.Entry
		for _, c := range []struct {
			kind  optout.Kind
			value string
		}{{optout.Host, f.host}, {optout.Prefix, f.prefix}, {optout.Pattern, f.pattern}, {optout.URL, f.url}} {
			if c.value == "" {
				continue
			}
			e, err := optout.NewEntry(c.kind, c.value, f.reason, time.Now())
			if err != nil {
				fmt.Fprintf(stderr, "crawl optout %s: --%s: %v\n", verb, c.kind, err)
				return ExitUsage
			}
			given = append(given, e)
		}
		if len(given) != 1 {
			fmt.Fprintf(stderr, "crawl optout %s: want exactly one of --host, --prefix, --pattern and --url, got %d\n", verb, len(given))
			return ExitUsage
		}
		e = given[0]
	}
	be, err := openOptOuts(ctx, o, verb == "add")
	if err != nil {
		fmt.Fprintf(stderr, "crawl optout %s: %v\n", verb, err)
		return ExitFailed
	}
	defer be.Close()
	store := optout.Store{T: be.Table}
	switch verb {
	case "add":
		if err := store.Add(ctx, e); err != nil {
			fmt.Fprintf(stderr, "crawl optout add: %v\n", err)
			return ExitFailed
		}
		fmt.Fprintf(stdout, "opted out %s %s: from now on no crawl admits its URLs (running handlers within %v)\n", e.Kind, e.Value, optout.RefreshEvery)
	case "remove":
		was, err := store.Remove(ctx, e)
		if err != nil {
			fmt.Fprintf(stderr, "crawl optout remove: %v\n", err)
			return ExitFailed
		}
		if !was {
			fmt.Fprintf(stderr, "crawl optout remove: %s %s is not on the list (crawl optout list shows it)\n", e.Kind, e.Value)
			return ExitFailed
		}
		fmt.Fprintf(stdout, "removed %s %s from the opt-out list\n", e.Kind, e.Value)
	default:
		list, err := store.List(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "crawl optout list: %v\n", err)
			return ExitFailed
		}
		printOptOuts(stdout, list, asJSON)
	}
	return ExitOK
}

// openOptOuts opens the backend of the list. An opt-out may come before the first crawl: on the
// embedded backend, add makes the state directory and its table when they are not there yet.
func openOptOuts(ctx context.Context, o RunOptions, create bool) (*Backend, error) {
	if !create || o.Backend != "embedded" {
		return openExisting(ctx, o)
	}
	be, err := OpenEmbedded(o.State)
	if err != nil {
		return nil, err
	}
	if err := be.Table.CreateTable(ctx, be.TableName); err != nil {
		be.Close()
		return nil, err
	}
	return be, nil
}

// optoutArgs are the arguments of `crawl optout VERB` after the verb.
const optoutArgs = " [--host H | --prefix URL | --pattern RE | --url URL] [--reason TEXT]"

// optoutEntryFlags are the flags that name an entry.
type optoutEntryFlags struct{ host, prefix, pattern, url, reason string }

func (f *optoutEntryFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.host, "host", "", "a host: it and every host under it")
	fs.StringVar(&f.prefix, "prefix", "", "a URL prefix: the URLs that start with it")
	fs.StringVar(&f.pattern, "pattern", "", "a Go regexp: the URLs it finds a match in")
	fs.StringVar(&f.url, "url", "", "one URL")
	fs.StringVar(&f.reason, "reason", "", "why, for the audit (an owner's request, a ticket)")
}

// optoutFlags parses the flags of `crawl optout`, for its help.
func optoutFlags(name string, args []string) (RunOptions, []string, error) {
	var f optoutEntryFlags
	var asJSON bool
	return adminFlags(name, "add|remove|list"+optoutArgs, args, &asJSON, f.add)
}

// printOptOuts writes the list, an entry a line, or as JSON.
func printOptOuts(w io.Writer, list []optout.Entry, asJSON bool) {
	if asJSON {
		if list == nil {
			list = []optout.Entry{}
		}
		b, _ := json.Marshal(list)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "the opt-out list is empty")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tVALUE\tADDED\tREASON")
	for _, e := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%q\n", e.Kind, e.Value, e.Added.UTC().Format(time.RFC3339), e.Reason)
	}
	tw.Flush()
}
