package parser

// Links that robots.txt refuses, dropped before they are admitted. The fetcher sends the robots.txt
// rules it applied to a message's pages' hosts with the message (message.Parse.Robots): a link of
// such a host that the crawl's scope takes and the rules disallow would be admitted, sent to fetch,
// claimed and only then skipped by the fetcher's robots check. It goes no further than here, and
// is counted (Counters.CountRobotsRefused) once its message is marked parsed. A link of a host
// whose rules did not come (another host, a robots.txt that could not be read or was too long to
// carry) goes to schedule as before, and the fetcher decides.

import (
	"context"
	"net/url"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/scope"
	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
	"github.com/crawlstack/crawlstack/shared/crawl/web/robots"
)

// heldRules are the message's robots.txt rules by host, those that are well formed: an entry
// that is not (a host that is not a scheme://host:port, no product token, a body over
// message.MaxRobotsBody) is left out, so its host has nothing refused early, and is logged.
func (h *Handler) heldRules(m *message.Parse) map[string]robots.Held {
	if len(m.Robots) == 0 {
		return nil
	}
	held := make(map[string]robots.Held, len(m.Robots))
	for _, r := range m.Robots {
		for _, host := range r.Hosts {
			if !wellFormed(host, r) {
				h.log.Warn("parse message: robots.txt rules left out", "host", host, "agent", r.Agent, "bytes", len(r.Body))
				continue
			}
			held[host] = robots.Held{Host: host, Agent: r.Agent, Body: r.Body}
		}
	}
	return held
}

// wellFormed says whether host is a scheme://host:port as robots.HostKey names it, and r has a
// product token and a body no longer than message.MaxRobotsBody.
func wellFormed(host string, r message.RobotsRules) bool {
	if r.Agent == "" || len(r.Body) > message.MaxRobotsBody {
		return false
	}
	u, err := url.Parse(host)
	if err != nil || u.Path != "" {
		return false
	}
	key, err := robots.HostKey(u)
	return err == nil && key == host
}

// refuseByRobots drops from the work's links those that held's rules disallow and the crawl's
// scope takes (a link out of scope goes to schedule, which refuses it as before), and notes on w
// how many URLs it dropped, each once.
func (h *Handler) refuseByRobots(ctx context.Context, w *work, held map[string]robots.Held) error {
	if len(held) == 0 || h.crawls == nil {
		return nil // without the crawl's scope, schedule and the fetcher decide every link
	}
	c, err := h.crawls.For(ctx, w.crawl)
	if err != nil {
		return err
	}
	refused := map[string]bool{}
	now := h.now()
	for i := range w.pages {
		p := &w.pages[i]
		if len(p.links) == 0 {
			continue
		}
		var root *url.URL
		if p.page.Root != "" {
			if root, err = urlnorm.Normalize(p.page.Root); err != nil {
				continue // schedule refuses the message's links with its error
			}
		}
		kept := make([]string, 0, len(p.links))
		for _, l := range p.links {
			if norm, ok := disallowed(held, c.Rules, root, l, p.page.Depth+1, now); ok {
				refused[norm] = true
				continue
			}
			kept = append(kept, l)
		}
		p.links = kept
	}
	w.robotsRefused = len(refused)
	return nil
}

// disallowed says whether the link raw, found at depth under root (nil: a seed, its own root),
// is one that the crawl's scope admits and its host's held rules disallow, and returns it
// normalised as schedule would admit it.
func disallowed(held map[string]robots.Held, rules scope.Rules, root *url.URL, raw string, depth int, now time.Time) (string, bool) {
	u, err := urlnorm.Normalize(raw)
	if err != nil {
		return "", false
	}
	key, err := robots.HostKey(u)
	if err != nil {
		return "", false
	}
	r, ok := held[key]
	if !ok {
		return "", false
	}
	if root == nil {
		root = u
	}
	if rules.Check(root, u, depth, now) != nil {
		return "", false
	}
	allowed, applies := r.Allows(u)
	return u.String(), applies && !allowed
}
