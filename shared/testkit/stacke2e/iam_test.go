package stacke2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/aws/callrecord"
	"github.com/crawlstack/crawlstack/shared/testkit/iampolicy"
	"github.com/crawlstack/crawlstack/shared/testkit/stackrun"
)

// kept are the grants that no call of the run uses, each with why it stays, keyed by function
// ("*": any), action and resource kind (own: the function's queue; send: a queue it sends to;
// table; lane: the slow lane's queue, which another function sends to, tried before send; or the key
// pattern in the bucket). Any other unused grant fails the test: remove it
// from the stack (infra/crawlstack/grants.go), or add it here with its reason.
var kept = map[string]string{
	// CDK's Queue.grantSendMessages grants these beside sqs:SendMessage; the functions send to
	// the queue URLs in their environment and never look a queue up or read its attributes.
	"* sqs:GetQueueAttributes on send": "part of CDK's grantSendMessages",
	"* sqs:GetQueueUrl on send":        "part of CDK's grantSendMessages",
	// The event source mapping's grant (CDK's SqsEventSource): Lambda's pollers use these with
	// the function's role. The local mapping (shared/local/localrun) reads no attributes, looks up no
	// URL, and extends no visibility within the template's timeouts.
	"* sqs:GetQueueAttributes on own":      "the event source mapping's grant: Lambda's pollers read the queue's attributes",
	"* sqs:GetQueueUrl on own":             "the event source mapping's grant: Lambda's pollers look the queue up",
	"* sqs:ChangeMessageVisibility on own": "the event source mapping's grant: Lambda's pollers change visibility",
	// Paths of the code that this crawl does not take.
	"schedule dynamodb:DeleteItem on table":        "the frontier takes an admission back (crawlstate Unadmit) when the table fails while it reserves the URL's budget",
	"fetch dynamodb:PutItem on table":              "a redirect's target is recorded as skipped (crawlstate Reject); the test site has no redirects",
	"fetch sqs:SendMessage on own":                 "a URL whose host's politeness slot is taken is sent again with a delay; the test template's host rate (100/s) made no URL wait",
	"schedule s3:GetObject on crawls/*/seeds.json": "a seed file read in chunks goes on from its report so far (shared/handler/scheduler seedchunks.go); the test's seed file is one chunk",
	// The test's two crawls of one seed file (the upload's and the tick's) run at once, the later
	// started recrawling the other: whether a previous record is there to reuse depends on timing.
	"parse s3:GetObject on records/*": "a recrawl reuses the previous crawl's record of a page it found unchanged (shared/handler/parser recrawl.go)",
	// The slow lane's crawl (TestIntegrationDeployedStackSlowLane): its runs kept their slots.
	"fetchslow dynamodb:PutItem on table": "a redirect's target is recorded as skipped (crawlstate Reject); the test site has no redirects",
	"fetchslow sqs:SendMessage on own":    "a run's rest, a retry or a URL late for its slot goes back to the lane's queue with a delay; the test's runs of one host kept their booked slots",
	"schedule sqs:SendMessage on lane":    "schedule sends the runs of polite hosts to the lane; the test template's host rate (100/s) makes no host polite, and TestIntegrationDeployedStackSlowLane's crawl makes this send",
}

// checkIAM holds every recorded call of each named function against its role's policies in the
// template, and lists the grants no call used.
func checkIAM(t *testing.T, d *deployment, names ...string) {
	for _, name := range names {
		f := d.stack.Functions[name]
		calls := d.calls(name)
		if len(calls) == 0 {
			t.Errorf("%s: no call was recorded", name)
			continue
		}
		reqs := checkAllowed(t, name, f, calls)
		actions := map[string]int{}
		for _, c := range calls {
			actions[c.Action]++
		}
		t.Logf("%s: %d calls allowed by its role: %v", name, len(calls), sortedCounts(actions))
		for _, g := range f.Policy.Unused(reqs) {
			kinds := []string{resourceKind(f.Mapping.QueueARN, g.Resource)}
			if lane := d.stack.Functions[fetchSlow]; lane != nil && name != fetchSlow && g.Resource == lane.Mapping.QueueARN {
				kinds = append([]string{"lane"}, kinds...)
			}
			why, ok := "", false
			for _, kind := range kinds {
				if why, ok = kept[name+" "+g.Action+" on "+kind]; ok {
					break
				}
				if why, ok = kept["* "+g.Action+" on "+kind]; ok {
					break
				}
			}
			if ok {
				t.Logf("%s: unused grant %s: kept, %s", name, g, why)
				continue
			}
			t.Errorf("%s: unused grant %s: remove it, or say in stacke2e's kept why it stays", name, g)
		}
	}
}

// checkAllowed holds each of calls, the named function's, against its role's policies in the
// template, and returns them as requests.
func checkAllowed(t *testing.T, name string, f *stackrun.Function, calls []callrecord.Call) []iampolicy.Request {
	t.Helper()
	var reqs []iampolicy.Request
	denied := map[string]int{} // by missing statement
	var first []struct{ msg, key string }
	for _, c := range calls {
		r := iampolicy.Request{Action: c.Action, Resource: c.Resource, Context: c.Context}
		if len(c.LeadingKeys) > 0 {
			r.Values = map[string][]string{"dynamodb:LeadingKeys": c.LeadingKeys}
		}
		reqs = append(reqs, r)
		if ok, by := f.Policy.Decide(r); !ok {
			key := missing(c)
			if denied[key] == 0 {
				why := "no statement allows it"
				if by != nil {
					why = "denied by " + by.String()
				}
				first = append(first, struct{ msg, key string }{fmt.Sprintf("%s: %s (%s) on %s: %s; missing statement: %s",
					name, c.Action, c.Operation, c.Resource, why, key), key})
			}
			denied[key]++
		}
	}
	for _, f := range first {
		t.Errorf("%s (%d calls like it)", f.msg, denied[f.key])
	}
	return reqs
}

// notOwned are, per function, writes of the table that its role must deny: keys of partitions the
// function does not own (docs/safety.md). The opt-out list is written by no function; only
// schedule deletes, and only URL items in a crawl's partitions; parse books no slot. The slow
// lane's fetchslow owns what fetch does.
var notOwned = map[string][]struct{ action, key string }{
	"schedule": {{"dynamodb:PutItem", "x#optout"}, {"dynamodb:UpdateItem", "x#optout"},
		{"dynamodb:DeleteItem", "x#optout"}, {"dynamodb:DeleteItem", "k#3"}, {"dynamodb:DeleteItem", "p#7"}},
	"fetch": {{"dynamodb:PutItem", "x#optout"}, {"dynamodb:UpdateItem", "x#optout"},
		{"dynamodb:DeleteItem", "c#crawl#1"}, {"dynamodb:DeleteItem", "x#optout"}},
	"parse": {{"dynamodb:PutItem", "x#optout"}, {"dynamodb:UpdateItem", "x#optout"}, {"dynamodb:UpdateItem", "p#7"},
		{"dynamodb:DeleteItem", "c#crawl#1"}},
	fetchSlow: {{"dynamodb:PutItem", "x#optout"}, {"dynamodb:UpdateItem", "x#optout"},
		{"dynamodb:DeleteItem", "c#crawl#1"}, {"dynamodb:DeleteItem", "x#optout"}},
}

// checkKeyOwnership holds each named function's role against writes of keys it does not own, on
// the table its recorded calls name: each must be denied. Writes of the partitions it does own are
// held by checkIAM against the calls the function made.
func checkKeyOwnership(t *testing.T, d *deployment, names ...string) {
	for _, name := range names {
		writes, ok := notOwned[name]
		if !ok {
			t.Fatalf("%s: no keys it must not own (notOwned)", name)
		}
		table := ""
		for _, c := range d.calls(name) {
			if strings.HasPrefix(c.Resource, "arn:aws:dynamodb:") {
				table = c.Resource
				break
			}
		}
		if table == "" {
			t.Errorf("%s: no call of the table was recorded", name)
			continue
		}
		owned := iampolicy.Request{Action: "dynamodb:UpdateItem", Resource: table,
			Values: map[string][]string{"dynamodb:LeadingKeys": {"c#crawl#1"}}}
		if ok, _ := d.stack.Functions[name].Policy.Decide(owned); !ok {
			t.Errorf("%s may not update an item of a crawl's partition: the check below proves nothing", name)
		}
		for _, w := range writes {
			r := iampolicy.Request{Action: w.action, Resource: table, Values: map[string][]string{"dynamodb:LeadingKeys": {w.key}}}
			if ok, by := d.stack.Functions[name].Policy.Decide(r); ok {
				t.Errorf("%s may %s an item of partition %s, which it does not own: allowed by %s", name, w.action, w.key, by)
			}
		}
	}
}

// missing is the statement that would allow c: its action on its resource, an object's key
// widened to its first folder (pages/abc.warc.gz: pages/*).
func missing(c callrecord.Call) string {
	res := c.Resource
	if rest, ok := strings.CutPrefix(res, "arn:aws:s3:::"); ok {
		if bucket, key, ok := strings.Cut(rest, "/"); ok {
			dir, _, _ := strings.Cut(key, "/")
			res = "arn:aws:s3:::" + bucket + "/" + dir + "/*"
		}
	}
	return fmt.Sprintf(`{"Effect": "Allow", "Action": %q, "Resource": %q}`, c.Action, res)
}

// resourceKind names a resource for kept: own (the function's queue), send (another queue),
// table, or an object pattern's key part (pages/*).
func resourceKind(own, res string) string {
	switch {
	case res == own:
		return "own"
	case strings.HasPrefix(res, "arn:aws:sqs:"):
		return "send"
	case strings.HasPrefix(res, "arn:aws:dynamodb:"):
		return "table"
	case strings.HasPrefix(res, "arn:aws:s3:::"):
		if _, key, ok := strings.Cut(strings.TrimPrefix(res, "arn:aws:s3:::"), "/"); ok {
			return key
		}
	}
	return res
}

func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	return b.String()
}
