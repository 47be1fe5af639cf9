package fetcher

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// A host that does not answer (down, refusing, timing out, its robots.txt unreadable) keeps its
// URLs waiting for their retries in the queue, and nothing else moves: without a word, a crawl of
// one such seed looks like a hang of minutes. So the first retry of a host's URL in this process
// says so at warn, once per host: the host, the cause, when the URL is tried next, and what to do.

// maxSaid bounds the hosts remembered as told; past it the memory starts over (a host may then be
// told of again, which costs a line).
const maxSaid = 4096

// saidHosts are the hosts whose wait was told of already.
type saidHosts struct {
	mu    sync.Mutex
	hosts map[string]bool
}

// first reports whether host was not told of yet, and remembers it.
func (s *saidHosts) first(host string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hosts[host] {
		return false
	}
	if s.hosts == nil || len(s.hosts) >= maxSaid {
		s.hosts = map[string]bool{}
	}
	s.hosts[host] = true
	return true
}

// unanswered are the classes of a host that does not answer.
var unanswered = map[errclass.Class]bool{
	errclass.DNS: true, errclass.Connect: true, errclass.TLS: true, errclass.Timeout: true,
	errclass.RobotsUnavailable: true,
}

// sayWaiting tells, once per host, that the host of f's URL did not answer and the URL waits to be
// tried again: after wait (0: when the queue delivers its message again), as try made+1 of the
// policy's.
func (h *Handler) sayWaiting(ctx context.Context, f *fetched, cause error, wait time.Duration, made int) {
	c := errclass.Of(cause)
	if !unanswered[c] || f.msg == nil {
		return
	}
	u, err := url.Parse(f.msg.URL)
	if err != nil || !h.said.first(u.Host) {
		return
	}
	next := "when its message is delivered again (the queue's visibility timeout)"
	if wait > 0 {
		next = h.now().Add(wait).UTC().Format(time.RFC3339)
	}
	h.log.WarnContext(ctx, "a host does not answer: its URLs wait and are tried again", "host", u.Host, "class", string(c),
		"err", cause.Error(), "nextTry", next, "tries", made, "maxTries", h.policy(ctx, f.msg.Crawl).Attempts(c),
		"hint", "check that the host is up and reachable from here (an address on a private network must be allowed: crawl run --allow-net, the stack's allowNet);"+
			" a URL that gives up ends with this class (crawl failures lists them)")
}
