package retry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// TestTableGivesEachClassItsCurve: a class the table names has its own tries and waits, a field
// it leaves unset and a class it does not name take the default, and the classes never tried
// again stay at one request whatever the default says.
func TestTableGivesEachClassItsCurve(t *testing.T) {
	tab := Table{Default: Curve{Tries: 4, Wait: 2 * time.Second}, Classes: map[errclass.Class]Curve{
		errclass.Timeout: {Tries: 1},
		errclass.HTTP5xx: {Tries: 6, Wait: 10 * time.Second},
		errclass.HTTP429: {Wait: 30 * time.Second},
	}}
	for c, want := range map[errclass.Class]int{errclass.Timeout: 1, errclass.HTTP5xx: 6, errclass.HTTP429: 4, errclass.Connect: 4,
		errclass.RobotsUnavailable: 4, errclass.HTTP4xx: 1, errclass.DNS: 1} {
		if got := tab.Attempts(c); got != want {
			t.Errorf("Attempts(%s) = %d, want %d", c, got, want)
		}
	}
	for _, tc := range []struct {
		c    errclass.Class
		n    int
		want time.Duration
	}{
		{errclass.HTTP5xx, 1, 10 * time.Second}, {errclass.HTTP5xx, 2, 40 * time.Second}, {errclass.HTTP5xx, 5, 150 * time.Second},
		{errclass.HTTP429, 1, 30 * time.Second}, {errclass.HTTP429, 3, 450 * time.Second},
		{errclass.Connect, 1, 2 * time.Second}, {errclass.Connect, 2, 8 * time.Second}, {errclass.Connect, 3, 30 * time.Second},
	} {
		if got := tab.Delay(tc.c, tc.n); got != tc.want {
			t.Errorf("Delay(%s, %d) = %v, want %v", tc.c, tc.n, got, tc.want)
		}
	}
	if tab.Limits(errclass.Internal) || !tab.Limits(errclass.Timeout) {
		t.Error("a table must leave backend failures (internal) to the queue and bound the rest")
	}
	if got := tab.MostTries(); got != 6 {
		t.Errorf("MostTries = %d, want 6", got)
	}
}

// TestTheDefaultTableIsTheDefaultPolicy: the stack's table of the default tries and wait answers
// as DefaultPolicy does, for every class and try.
func TestTheDefaultTableIsTheDefaultPolicy(t *testing.T) {
	d := DefaultPolicy()
	tab := Table{Default: Curve{Tries: d.Max, Wait: d.First}}
	for _, c := range errclass.All {
		if tab.Attempts(c) != d.Attempts(c) || tab.Limits(c) != d.Limits(c) {
			t.Errorf("%s: table %d/%v, default %d/%v", c, tab.Attempts(c), tab.Limits(c), d.Attempts(c), d.Limits(c))
		}
		for n := 1; n < 8; n++ {
			if tab.Delay(c, n) != d.Delay(c, n) {
				t.Errorf("Delay(%s, %d): table %v, default %v", c, n, tab.Delay(c, n), d.Delay(c, n))
			}
		}
	}
}

// TestSpecTableOverTheStacks: the spec's class curve, then its default, then the stack's class
// curve, then the stack's default.
func TestSpecTableOverTheStacks(t *testing.T) {
	stack := Table{Default: Curve{Tries: 4, Wait: 2 * time.Second}, Classes: map[errclass.Class]Curve{
		errclass.HTTP429: {Tries: 2, Wait: 20 * time.Second},
		errclass.Connect: {Wait: 5 * time.Second},
	}}
	spec := Table{Default: Curve{Tries: 3}, Classes: map[errclass.Class]Curve{errclass.Timeout: {Tries: 1, Wait: time.Second}}}
	got := spec.Over(stack)
	for c, want := range map[errclass.Class]Curve{
		errclass.Timeout:           {Tries: 1, Wait: time.Second},      // the spec's class
		errclass.HTTP429:           {Tries: 3, Wait: 20 * time.Second}, // the spec's default tries, the stack's class wait
		errclass.Connect:           {Tries: 3, Wait: 5 * time.Second},  // the same
		errclass.HTTP5xx:           {Tries: 3, Wait: 2 * time.Second},  // the spec's default, the stack's default wait
		errclass.RobotsUnavailable: {Tries: 3, Wait: 2 * time.Second},  // the same
	} {
		if cv := got.Curve(c); cv != want {
			t.Errorf("%s: %+v, want %+v", c, cv, want)
		}
	}
	if z := (Table{}).Over(stack); z.Attempts(errclass.HTTP429) != 2 || z.Curve(errclass.Connect) != (Curve{Tries: 4, Wait: 5 * time.Second}) {
		t.Errorf("an empty spec table over the stack's changed it: %+v", z)
	}
}

// TestATableBoundsTheRequestsOfEachClass runs DoWith under a table: a class fails its own number
// of times, another its own.
func TestATableBoundsTheRequestsOfEachClass(t *testing.T) {
	tab := Table{Default: Curve{Tries: 4, Wait: time.Millisecond}, Classes: map[errclass.Class]Curve{
		errclass.Timeout: {Tries: 2}, errclass.HTTP5xx: {Tries: 3}}}
	for c, want := range map[errclass.Class]int{errclass.Timeout: 2, errclass.HTTP5xx: 3, errclass.Connect: 4} {
		calls := 0
		err := DoWith(context.Background(), Options{MaxQuick: time.Hour, BackOff: &PolicyBackOff{P: tab}, Timer: &instant{}},
			func() (time.Duration, error) { calls++; return 0, errclass.Errorf(c, "fails") })
		var spent *Exhausted
		if !errors.As(err, &spent) || calls != want {
			t.Errorf("%s: %d requests and %v, want %d and Exhausted", c, calls, err, want)
		}
	}
}

func TestParseClasses(t *testing.T) {
	got, err := ParseClasses(" timeout=2, http_5xx=6/10s ,http_429=/30s")
	if err != nil {
		t.Fatal(err)
	}
	want := map[errclass.Class]Curve{errclass.Timeout: {Tries: 2}, errclass.HTTP5xx: {Tries: 6, Wait: 10 * time.Second},
		errclass.HTTP429: {Wait: 30 * time.Second}}
	if len(got) != len(want) {
		t.Fatalf("ParseClasses = %v, want %v", got, want)
	}
	for c, cv := range want {
		if got[c] != cv {
			t.Errorf("%s: %+v, want %+v", c, got[c], cv)
		}
	}
	if back := FormatClasses(got); back != "timeout=2,http_429=/30s,http_5xx=6/10s" {
		t.Errorf("FormatClasses = %q", back)
	}
	if m, err := ParseClasses("  "); m != nil || err != nil {
		t.Errorf("ParseClasses(blank) = %v, %v; want nil, nil", m, err)
	}
	for in, wants := range map[string][]string{
		"timout=2":                      {`unknown error class "timout"`, `did you mean "timeout"?`},
		"HTTP-5XX=2":                    {`did you mean "http_5xx"?`},
		"http_4xx=3":                    {`class "http_4xx" is never tried again`, "connect, timeout, http_429, http_5xx, robots_unavailable"},
		"timeout=0":                     {`tries "0"`},
		"timeout=21":                    {"tries 21: want 1 to 20"},
		"timeout=2/2m":                  {"wait 2m0s: want more than 0 and at most 1m0s"},
		"timeout=2/soon":                {`wait "soon"`},
		"timeout":                       {"want CLASS=TRIES"},
		"timeout=2,timeout=3":           {"class timeout set twice"},
		"timout=2,http_5xx=x,connect=1": {`"timout"`, `http_5xx: tries "x"`},
	} {
		_, err := ParseClasses(in)
		if err == nil {
			t.Errorf("ParseClasses(%q) succeeded, want an error", in)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseClasses(%q) = %v, want it to say %q", in, err, w)
			}
		}
	}
}
