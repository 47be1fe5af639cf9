package crawlstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/flatjson"
	"github.com/crawlstack/crawlstack/shared/port/table"
)

// Reading URLs: one (Get, Peek, Unsent) or all of a crawl's (ScanURLs), each as its group holds
// it (outcomes.go).

// Get returns the URL item, with its claim or outcome as its group holds them, or
// table.ErrNotFound.
func (s *Store) Get(ctx context.Context, crawl, key string) (URL, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, key))
	if err != nil {
		return URL{}, fmt.Errorf("get url %s: %w", key, err)
	}
	return s.withGroup(ctx, crawl, urlFrom(key, it))
}

// Peek returns the URL item as it is, without what its group holds: enough to tell whether it was
// admitted, and by which message.
func (s *Store) Peek(ctx context.Context, crawl, key string) (URL, error) {
	it, err := s.t.Get(ctx, URLKey(crawl, key))
	if err != nil {
		return URL{}, fmt.Errorf("get url %s: %w", key, err)
	}
	return urlFrom(key, it), nil
}

// Unsent reports whether the Links message by must send the URL's fetch message again
// (URL.Unsent), with the URL's group; it returns table.ErrNotFound when the URL has no item. Its
// group is read only when by admitted it.
func (s *Store) Unsent(ctx context.Context, crawl, key, by string) (bool, string, error) {
	u, err := s.Peek(ctx, crawl, key)
	if err != nil {
		return false, "", err
	}
	if !u.Unsent(by) {
		return false, GroupOf(u), nil
	}
	u, err = s.withGroup(ctx, crawl, u)
	if err != nil {
		return false, "", err
	}
	return u.Unsent(by), GroupOf(u), nil
}

// ScanURLs calls fn for every URL item of the crawl, as Get reads it (for tests, audits and
// reports; not the hot path). It holds what the crawl's groups say of each URL in memory (about 125
// bytes a URL, and its outcome: some 250 bytes a page fetched).
func (s *Store) ScanURLs(ctx context.Context, crawl string, fn func(URL) error) error {
	return s.scanURLs(ctx, crawl, false, fn)
}

// scanURLs is ScanURLs. With brief, a URL's outcome is cut to its state, class and detail (no
// Page, nothing of a recrawl): what a tally reads, at about 125 bytes a URL in all.
func (s *Store) scanURLs(ctx context.Context, crawl string, brief bool, fn func(URL) error) error {
	heldBy := map[string]held{} // by group + "#" + the URL's short key
	briefs := map[string]string{}
	gprefix := groupKey(crawl, "")
	err := s.t.Scan(ctx, gprefix, func(key string, it table.Item) error {
		group := key[len(gprefix):]
		for name, v := range it {
			if len(name) < 2 || !strings.Contains(perURLAttrs, name[:1]) {
				continue
			}
			letter := name[:1]
			k := group + "#" + name[1:] // a new string: the item's are let go
			h := heldBy[k]
			switch letter {
			case outcomeLetter:
				raw, _ := v.(string)
				if brief {
					b, err := briefOutcome(raw, briefs)
					if err != nil {
						return fmt.Errorf("outcome %s of group %s: %w", name, group, err)
					}
					h.outcome, h.brief = b, true
				} else {
					h.outcome = strings.Clone(raw)
				}
			case ownerLetter:
				owner, _ := v.(string)
				h.owner = strings.Clone(owner)
			case leaseLetter:
				h.lease = it.Int(name)
			case redriveLetter:
				h.redrive = it.Bool(name)
			case tombstoneLetter:
				h.gone = true
			}
			heldBy[k] = h
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan the groups of %s: %w", crawl, err)
	}
	prefix := URLKey(crawl, "")
	return s.t.Scan(ctx, prefix, func(key string, it table.Item) error {
		u := urlFrom(key[len(prefix):], it)
		if err := u.fromHeld(crawl, heldBy[GroupOf(u)+"#"+shortKey(u.Key)]); err != nil {
			return err
		}
		return fn(u)
	})
}

// briefOutcome is an outcome as its group's item holds it, cut to what a tally reads: its state's
// letter, its class and its detail, joined by NULs (URL.applyBrief reads it); the same ones share
// one string in briefs.
func briefOutcome(raw string, briefs map[string]string) (string, error) {
	s, c, d, err := briefParts(raw)
	if err != nil {
		return "", err
	}
	b := s + "\x00" + c + "\x00" + d
	if s, ok := briefs[b]; ok {
		return s, nil
	}
	if d == "" {
		briefs[b] = b // details vary; the rest repeat
	}
	return b, nil
}

// briefParts reads the state's letter, the class and the detail of a stored outcome: read flat
// (flatjson) when it is, as encoding/json would read them into stored, and by encoding/json
// otherwise (a revisit's nested un, or a document flatjson does not read).
func briefParts(raw string) (s, c, d string, err error) {
	flat := true
	read := flatjson.Members(raw, func(name string, v flatjson.Value) {
		var dst *string
		switch name {
		case "s":
			dst = &s
		case "c":
			dst = &c
		case "d":
			dst = &d
		default:
			// encoding/json matches a field's name to a member's without regard to case: "S" would
			// be read as s. Such a document is left to it.
			if len(name) <= 2 && (strings.EqualFold(name, "s") || strings.EqualFold(name, "c") || strings.EqualFold(name, "d")) {
				flat = false
			}
			return
		}
		str, isString := v.String()
		if !isString {
			flat = false // encoding/json's error to report
		}
		*dst = str
	})
	if read && flat {
		return s, c, d, nil
	}
	var st struct {
		S string         `json:"s"`
		C errclass.Class `json:"c"`
		D string         `json:"d"`
	}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return "", "", "", err
	}
	return st.S, string(st.C), st.D, nil
}

// applyBrief sets u's state, class and detail from its outcome as briefOutcome cut it.
func (u *URL) applyBrief(brief string) error {
	code, rest, _ := strings.Cut(brief, "\x00")
	class, detail, _ := strings.Cut(rest, "\x00")
	if u.State = stateOf(code); u.State == "" {
		return fmt.Errorf("outcome of %s: unknown state %q", u.Key, code)
	}
	u.Class, u.Detail = errclass.Class(class), detail
	return nil
}
