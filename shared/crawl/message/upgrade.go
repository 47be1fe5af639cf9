package message

import (
	"encoding/json"
	"fmt"
)

// Upgrades from the schema version before Version (Oldest) to Version, one per kind. Decode
// applies the kind's upgrade to a message of Oldest, then decodes it strictly as Version, so that
// messages written before a deploy are read after it: during a deploy, and while they wait in a
// queue or a DLQ. Each schema change keeps one upgrade per kind here, from the version before;
// the one before that is dropped with it (docs/operating.md, "A deploy during a crawl").
//
// Version 2 changed one key:
//   - fetch: a target's group, "g" in version 1, is "group", at the top level and in each of
//     "urls";
//   - links, parse and check: no change.
//
// A field added as optional (omitted when empty) is no schema change: a message without it is
// read as before, and only a handler of the same deploy writes it. So parse's "rendered" and
// "renderError" (written by the render step, a function that exists only from the deploy that
// reads them) came without a new version: a bump would have made the version-1 messages still
// queued unreadable, and helped no reader, since a parse function of an older deploy refuses a
// message of a newer version as it refuses an unknown field.
var upgrades = map[Kind]func(fields map[string]json.RawMessage) error{
	KindFetch: func(f map[string]json.RawMessage) error {
		rename(f, "g", "group")
		raw, ok := f["urls"]
		if !ok {
			return nil
		}
		var urls []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &urls); err != nil {
			return fmt.Errorf("urls: %w", err)
		}
		for _, u := range urls {
			rename(u, "g", "group")
		}
		b, err := json.Marshal(urls)
		if err != nil {
			return err
		}
		f["urls"] = b
		return nil
	},
	KindLinks: func(map[string]json.RawMessage) error { return nil },
	KindParse: func(map[string]json.RawMessage) error { return nil },
	KindCheck: func(map[string]json.RawMessage) error { return nil },
}

// rename moves fields[from] to fields[to], unless fields has to already (which the strict decode
// then refuses as an unknown field from).
func rename(fields map[string]json.RawMessage, from, to string) {
	v, ok := fields[from]
	if _, taken := fields[to]; !ok || taken {
		return
	}
	delete(fields, from)
	fields[to] = v
}

// upgrade returns body, a message of kind k and schema version v (Oldest), as a message of
// Version.
func upgrade(k Kind, v int, body string) (string, error) {
	fn, ok := upgrades[k]
	if !ok || v != Oldest {
		return "", fmt.Errorf("no upgrade of %s messages from schema version %d", k, v)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &fields); err != nil {
		return "", err
	}
	if err := fn(fields); err != nil {
		return "", err
	}
	fields["v"] = json.RawMessage(fmt.Sprint(Version))
	b, err := json.Marshal(fields)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// IsCurrent reports whether body is a message of Version. A handler that passes a message on
// whole (a paused crawl's, sent back to wait) writes one of Oldest again as Version, so that a
// message waits through no more than one schema change.
func IsCurrent(body string) bool {
	var h Header
	return json.Unmarshal([]byte(body), &h) == nil && h.V == Version
}
