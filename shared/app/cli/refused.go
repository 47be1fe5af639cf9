package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// errFound stops a scan at the first URL it looks for.
var errFound = errors.New("found")

// explainRefused says why n URLs of the crawl were refused as ssrf, with one of them as the
// example, and names the flag that admits their address. reconsiders is whether a run with that
// flag reconsiders them (the embedded backend: reconsider.go); otherwise a crawl that fetched
// pages has ended, and only --fresh crawls it again.
func explainRefused(ctx context.Context, w io.Writer, st *crawlstate.Store, crawl string, n, fetched int64, reconsiders bool) {
	var first crawlstate.URL
	err := st.EachURL(ctx, crawl, func(u crawlstate.URL) error {
		if u.Class == errclass.SSRF {
			first = u
			return errFound
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		fmt.Fprintf(w, "crawl: %d URLs were refused as non-public addresses (class ssrf); --allow-net CIDR admits a range\n", n)
		return
	}
	urls := fmt.Sprintf("%d URLs were", n)
	if n == 1 {
		urls = "1 URL was"
	}
	fmt.Fprintf(w, "crawl: %s refused (class ssrf): the crawler fetches only public addresses by default;"+
		" %s was refused: %s\n", urls, first.URL, strings.TrimPrefix(first.Detail, string(errclass.SSRF)+": "))
	again := "run the command again"
	if reconsiders && fetched > 0 {
		again += " (the run reconsiders the URLs refused)"
	} else if fetched > 0 {
		again += " with --fresh too (this crawl has ended: a run with --fresh starts it again)"
	}
	fmt.Fprintf(w, "crawl: to crawl a non-public address of your own, add %s and %s\n", allowNetHint(first.URL), again)
}

// allowNetHint is the --allow-net flag that admits the address of rawURL when its host is an IP,
// and the flag's general form otherwise.
func allowNetHint(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "--allow-net CIDR"
	}
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return "--allow-net CIDR (the range its name resolves to)"
	}
	return "--allow-net " + a.String()
}
