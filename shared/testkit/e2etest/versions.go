package e2etest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/port/queue"
)

// OldWriters is a Sender that sends every other message as the crawler of the schema version
// before wrote it (message.Oldest, version 1: "v":1, and a fetch target's group as "g"): the
// handlers of a deploy and those of the one before, writing into the same queues. It counts the
// old messages it sent by kind, and the old fetch targets with a group. It is safe for concurrent
// use.
type OldWriters struct {
	queue.Sender
	mu    sync.Mutex
	n     int
	Old   map[message.Kind]int
	Group int
}

// SendBatch sends entries, every other one of the whole run's as version 1.
func (o *OldWriters) SendBatch(ctx context.Context, q string, entries []queue.Entry) error {
	out := make([]queue.Entry, len(entries))
	o.mu.Lock()
	for i, e := range entries {
		out[i] = e
		if o.n++; o.n%2 == 0 {
			continue
		}
		if body, kind, groups, ok := asVersion1(e.Body); ok {
			out[i].Body = body
			if o.Old == nil {
				o.Old = map[message.Kind]int{}
			}
			o.Old[kind]++
			o.Group += groups
		}
	}
	o.mu.Unlock()
	return o.Sender.SendBatch(ctx, q, out)
}

// asVersion1 rewrites a version 2 message as version 1 wrote it; groups counts the fetch targets
// whose group was renamed. ok is false for a body that is not a version 2 message.
func asVersion1(body string) (v1 string, kind message.Kind, groups int, ok bool) {
	var f map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &f) != nil || string(f["v"]) != "2" {
		return "", "", 0, false
	}
	_ = json.Unmarshal(f["kind"], &kind)
	f["v"] = json.RawMessage("1")
	if kind == message.KindFetch {
		groups += renameKey(f, "group", "g")
		if raw, has := f["urls"]; has {
			var urls []map[string]json.RawMessage
			if json.Unmarshal(raw, &urls) != nil {
				return "", "", 0, false
			}
			for _, u := range urls {
				groups += renameKey(u, "group", "g")
			}
			f["urls"], _ = json.Marshal(urls)
		}
	}
	b, err := json.Marshal(f)
	if err != nil || !strings.Contains(string(b), `"v":1`) {
		return "", "", 0, false
	}
	return string(b), kind, groups, true
}

func renameKey(m map[string]json.RawMessage, from, to string) int {
	v, ok := m[from]
	if !ok {
		return 0
	}
	delete(m, from)
	m[to] = v
	return 1
}

// CheckVersionBump crawls the site with the handlers of two deploys writing into the same
// queues: every other message is sent as schema version 1 (OldWriters), the rest as version 2,
// so that each handler reads both, mixed in its batches, all through the crawl. Nothing is lost
// and no page is fetched twice. A message of a version newer than this code writes, and one of a
// version before the one it reads, are quarantined with reasons that say so, and nothing else is.
func (h *Harness) CheckVersionBump(concurrency int) {
	t := h.T
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{h.Res.Schedule, h.Res.Fetch} {
		if err := h.Queue.SendBatch(ctx, q, []queue.Entry{
			{ID: "newer", Body: `{"v":3,"kind":"links","crawl":"x","depth":0,"urls":["http://127.0.0.1/"]}`},
			{ID: "older", Body: `{"v":0,"kind":"fetch","crawl":"x","url":"http://127.0.0.1/","root":"http://127.0.0.1/"}`},
		}); err != nil {
			t.Fatal(err)
		}
	}
	ports := h.Ports()
	old := &OldWriters{Sender: h.Queue}
	ports.Queue = old
	crawl, err := h.Crawl(ctx, h.Config(), ports, h.Queue, concurrency)
	if err != nil {
		t.Fatal(err)
	}
	h.CheckNothingLost(crawl)
	if r := h.Site.Repeats(); len(r) != 0 {
		t.Errorf("pages fetched more than once: %v", r)
	}
	for _, k := range []message.Kind{message.KindLinks, message.KindFetch, message.KindParse} {
		if old.Old[k] == 0 {
			t.Errorf("no %s message was sent as version 1 (%v): the crawl never read both versions", k, old.Old)
		}
	}
	if old.Group == 0 {
		t.Errorf("no fetch target of version 1 had a group: the upgrade of its key was never read")
	}
	t.Logf("sent as version 1: %v, %d fetch targets with a group", old.Old, old.Group)
	keys, err := h.Blobs.List(ctx, "quarantine/")
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, k := range keys {
		b, err := h.Blobs.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Reason string }
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.Contains(e.Reason, "written by a newer version of the crawler") && strings.Contains(e.Reason, "deploy the new version everywhere"):
			reasons["newer"]++
		case strings.Contains(e.Reason, "two or more schema versions old"):
			reasons["older"]++
		default:
			t.Errorf("quarantined %s: %s", k, e.Reason)
		}
	}
	if reasons["newer"] != 2 || reasons["older"] != 2 {
		t.Errorf("quarantined by reason %v, want 2 newer and 2 older (one of each on the schedule and fetch queues)", reasons)
	}
}
