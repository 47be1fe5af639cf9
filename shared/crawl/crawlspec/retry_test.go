package crawlspec

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/retry"
)

const retrySpec = `version: 1
seeds: [http://127.0.0.1/]
retry:
  default: {tries: 3, wait: 30s}
  classes:
    timeout: {tries: 1}
    http_5xx: {tries: 4, wait: 5s}
`

// TestARetrySectionOverTheStacksPolicy: the spec's tries and waits per class reach the crawl's
// policy through the stored settings, over the stack's.
func TestARetrySectionOverTheStacksPolicy(t *testing.T) {
	stack := retry.Table{Default: retry.Curve{Tries: 4, Wait: 2 * time.Second},
		Classes: map[errclass.Class]retry.Curve{errclass.HTTP429: {Wait: 20 * time.Second}}}
	s, err := Parse([]byte(retrySpec), Bounds{MaxTries: stack.MostTries()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s.Settings)
	if err != nil {
		t.Fatal(err)
	}
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	c, err := back.Over(Crawl{Retry: stack})
	if err != nil {
		t.Fatal(err)
	}
	for cl, want := range map[errclass.Class]retry.Curve{
		errclass.Timeout: {Tries: 1, Wait: 30 * time.Second},
		errclass.HTTP5xx: {Tries: 4, Wait: 5 * time.Second},
		errclass.HTTP429: {Tries: 3, Wait: 30 * time.Second},
		errclass.Connect: {Tries: 3, Wait: 30 * time.Second},
	} {
		if got := c.Retry.Curve(cl); got != want {
			t.Errorf("%s: %+v, want %+v (stored settings %s)", cl, got, want, b)
		}
	}
	// A spec without a retry section keeps the stack's policy as it is.
	plain, err := (&Settings{Version: Version}).Over(Crawl{Retry: stack})
	if err != nil || plain.Retry.Curve(errclass.HTTP429) != (retry.Curve{Tries: 4, Wait: 20 * time.Second}) {
		t.Errorf("no retry section: %+v, %v; want the stack's", plain.Retry, err)
	}
	// Stored settings a spec could not have held are refused.
	bad := Settings{Version: Version, Retry: &retry.Table{Classes: map[errclass.Class]retry.Curve{errclass.HTTP4xx: {Tries: 2}}}}
	if _, err := bad.Over(Crawl{Retry: stack}); err == nil || !strings.Contains(err.Error(), "http_4xx") {
		t.Errorf("stored retry of http_4xx: %v, want an error naming it", err)
	}
}

func TestBadRetrySectionsSayWhereAndWhat(t *testing.T) {
	head := "version: 1\nseeds: [http://127.0.0.1/]\n"
	for name, tt := range map[string]struct {
		body   string
		bounds Bounds
		want   []string
	}{
		"misspelt class": {"retry:\n  classes:\n    timout: {tries: 1}\n    http-5xx: {tries: 2}\n", Bounds{},
			[]string{`line 5: retry.classes.timout: unknown error class "timout"; did you mean "timeout"?`,
				`line 6: retry.classes.http-5xx: unknown error class "http-5xx"; did you mean "http_5xx"?`}},
		"a class never tried again": {"retry:\n  classes:\n    http_4xx: {tries: 2}\n", Bounds{},
			[]string{`line 5: retry.classes.http_4xx: class "http_4xx" is never tried again: want one of connect, timeout`}},
		"bad values": {"retry:\n  default: {tries: 0, wait: forever}\n  classes:\n    timeout: {tries: 30, wait: 2m}\n    connect: {}\n", Bounds{},
			[]string{"line 4: retry.default.tries: 0: want 1 or more", `line 4: retry.default.wait: "forever": want a duration`,
				"line 6: retry.classes.timeout.tries: 30: want 1 to 20 requests", `line 6: retry.classes.timeout.wait: "2m": want a duration`,
				"line 7: retry.classes.connect: empty: set tries, wait or both"}},
		"unknown keys": {"retry:\n  defaults: {tries: 2}\n  classes:\n    timeout: {retries: 2}\n", Bounds{},
			[]string{"line 4: retry.defaults: unknown setting (known: classes, default)", "line 6: retry.classes.timeout.retries: unknown setting (known: tries, wait)"}},
		"over the stack's bound": {"retry:\n  default: {tries: 5}\n  classes:\n    http_5xx: {tries: 4}\n", Bounds{MaxTries: 4},
			[]string{"line 4: retry.default.tries: 5 is over the stack's bound of 4 (the most tries it gives a class: CRAWL_MAX_TRIES"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(head+tt.body), tt.bounds)
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %v, want Errors", err)
			}
			if len(es) != len(tt.want) {
				t.Errorf("%d errors, want %d:\n%v", len(es), len(tt.want), err)
			}
			for i, w := range tt.want {
				if i < len(es) && !strings.HasPrefix(es[i].Error(), w) {
					t.Errorf("error %d is %q, want it to start with %q", i, es[i].Error(), w)
				}
			}
		})
	}
}
