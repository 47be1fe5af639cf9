package fetcher

// The robots.txt rules that travel with the pages to parse. Nearly every link a crawl admits is
// of its page's own host (host scope), and the fetcher has that host's rules in hand when it
// fetches the page: carried in the parse message, they let parse drop the links they disallow
// before schedule admits them (an admission write, a share of a fetch message, its claim and
// outcome writes saved for each). Only rules read from a robots.txt that answered 2xx travel;
// the fetcher still checks every URL it fetches.

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// robotsSlack is room kept in a parse message for what is added to it on the way (its SQS
// attributes: the trace context).
const robotsSlack = 2 << 10

// heldRules returns the robots.txt rules that the check of u applied, if they can travel.
func (h *Handler) heldRules(ctx context.Context, u *url.URL) *message.RobotsRules {
	rh, ok := h.robots.(RobotsHolder)
	if !ok {
		return nil
	}
	held, ok := rh.Held(ctx, u, message.MaxRobotsBody)
	if !ok {
		return nil
	}
	return &message.RobotsRules{Hosts: []string{held.Host}, Agent: held.Agent, Body: held.Body}
}

// addRobots adds r, the rules of one host, to rules: to the entry of the same file and product
// token, if there is one (hosts often serve the same robots.txt), unless it names the host already.
func addRobots(rules []message.RobotsRules, r *message.RobotsRules) []message.RobotsRules {
	if r == nil || len(r.Hosts) != 1 {
		return rules
	}
	for i, have := range rules {
		if have.Agent == r.Agent && have.Body == r.Body {
			if !slices.Contains(have.Hosts, r.Hosts[0]) {
				rules[i].Hosts = append(rules[i].Hosts, r.Hosts[0])
			}
			return rules
		}
	}
	return append(rules, message.RobotsRules{Hosts: []string{r.Hosts[0]}, Agent: r.Agent, Body: r.Body})
}

// encodeParse encodes m with as many of rules as fit: at most message.MaxRobotsBytes, below
// message.MaxBytes (extra: bytes the render step adds on the way). Rules that do not fit are left
// out, and parse refuses nothing early for their hosts.
func encodeParse(m *message.Parse, rules []message.RobotsRules, extra int) (string, error) {
	m.Robots = nil
	body, err := message.Encode(m)
	if err != nil || len(rules) == 0 {
		return body, err
	}
	used := len(body) + extra + robotsSlack
	room := min(message.MaxRobotsBytes, message.MaxBytes-used)
	for _, r := range rules {
		b, err := json.Marshal(r)
		if err != nil || len(b)+1 > room {
			continue
		}
		room -= len(b) + 1
		m.Robots = append(m.Robots, r)
	}
	if len(m.Robots) == 0 {
		return body, nil
	}
	withRules, err := message.Encode(m)
	if err != nil {
		m.Robots = nil
		return body, nil // cannot happen within the room counted; the pages go without the rules
	}
	return withRules, nil
}
