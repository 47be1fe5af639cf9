package retry

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// Tunable are the classes whose tries and waits a Table sets: those that may succeed when tried
// again (errclass.Retryable) but for backend failures (internal), which the queue retries, and a
// robots.txt that is down. Every other class ends its URL at its first failure.
var Tunable = []errclass.Class{errclass.Connect, errclass.Timeout, errclass.HTTP429, errclass.HTTP5xx, errclass.RobotsUnavailable}

// Bounds of a Curve: at most MaxTries requests, and a first wait of at most MaxWait (the waits
// grow to 15 times it, SQS's longest delay of 15 minutes).
const (
	MaxTries = 20
	MaxWait  = time.Minute
)

// Curve is the tries and the first wait of a class: the wait after the first failed request,
// each next wait 4 times longer, at most 15 times it. A zero field is unset: the curve under it
// gives it (Table).
type Curve struct {
	Tries int           `json:"tries,omitempty"`
	Wait  time.Duration `json:"wait,omitempty"`
}

// over is c with o's set fields over it.
func (c Curve) over(o Curve) Curve {
	if o.Tries > 0 {
		c.Tries = o.Tries
	}
	if o.Wait > 0 {
		c.Wait = o.Wait
	}
	return c
}

// Check says what is wrong with c's set fields, or nil.
func (c Curve) Check() error {
	switch {
	case c.Tries < 0 || c.Tries > MaxTries:
		return fmt.Errorf("tries %d: want 1 to %d requests", c.Tries, MaxTries)
	case c.Wait < 0 || c.Wait > MaxWait:
		return fmt.Errorf("wait %v: want more than 0 and at most %v", c.Wait, MaxWait)
	}
	return nil
}

// Table is a Policy with a Curve per class over a default one: the stack's (CRAWL_MAX_TRIES,
// CRAWL_RETRY_WAIT and CRAWL_RETRY_CLASSES), and a crawl's, its spec's retry section over the
// stack's (Over). A class it does not name takes Default; a field a class's curve leaves unset
// takes Default's. Backend failures (internal) are left to the queue, as DefaultPolicy does.
type Table struct {
	Default Curve                    `json:"default,omitzero"`
	Classes map[errclass.Class]Curve `json:"classes,omitempty"`
}

var _ Policy = Table{}

// IsZero reports whether t sets nothing: a crawl whose spec has no retry section.
func (t Table) IsZero() bool { return t.Default == (Curve{}) && len(t.Classes) == 0 }

// Curve is class c's curve in t.
func (t Table) Curve(c errclass.Class) Curve { return t.Default.over(t.Classes[c]) }

// tries is the Tries policy of class c.
func (t Table) tries(c errclass.Class) Tries {
	cv := t.Curve(c)
	return Tries{Max: cv.Tries, First: cv.Wait, Last: 15 * cv.Wait, Factor: 4, Unlimited: []errclass.Class{errclass.Internal}}
}

// Attempts implements Policy.
func (t Table) Attempts(c errclass.Class) int { return t.tries(c).Attempts(c) }

// Delay implements Policy.
func (t Table) Delay(c errclass.Class, n int) time.Duration { return t.tries(c).Delay(c, n) }

// Limits implements Policy.
func (t Table) Limits(c errclass.Class) bool { return c != errclass.Internal }

// Over returns t over base: for each class, t's curve of the class, then t's default, then
// base's curve of the class, each setting what the one before left unset. A spec's default
// therefore sets every class it does not name, the stack's per-class settings included.
func (t Table) Over(base Table) Table {
	out := Table{Default: base.Default.over(t.Default)}
	for _, c := range Tunable {
		cv := base.Curve(c).over(t.Default).over(t.Classes[c])
		if cv != out.Default {
			if out.Classes == nil {
				out.Classes = map[errclass.Class]Curve{}
			}
			out.Classes[c] = cv
		}
	}
	return out
}

// MostTries is the most requests t allows any class.
func (t Table) MostTries() int {
	n := t.Default.Tries
	for _, c := range Tunable {
		n = max(n, t.Curve(c).Tries)
	}
	return n
}

// ParseClass reads a class name that a Table may set, with a suggestion for a misspelt one.
func ParseClass(name string) (errclass.Class, error) {
	c := errclass.Class(strings.TrimSpace(name))
	if slices.Contains(Tunable, c) {
		return c, nil
	}
	if slices.Contains(errclass.All, c) {
		return "", fmt.Errorf("class %q is never tried again: want one of %s", c, tunableList())
	}
	msg := fmt.Sprintf("unknown error class %q", name)
	if near := nearestClass(string(c)); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return "", fmt.Errorf("%s (want one of %s)", msg, tunableList())
}

func tunableList() string {
	names := make([]string, len(Tunable))
	for i, c := range Tunable {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// nearestClass is the tunable class closest to name: the same but for case, '-' and spaces, or
// within a few edits; "" when none is close.
func nearestClass(name string) string {
	fold := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "_", " ", "_").Replace(s))
	}
	best, bestD := "", 4
	for _, c := range Tunable {
		if fold(string(c)) == fold(name) {
			return string(c)
		}
		if d := levenshtein.ComputeDistance(fold(name), string(c)); d < bestD {
			best, bestD = string(c), d
		}
	}
	return best
}

// ParseClasses reads the stack's curves per class (CRAWL_RETRY_CLASSES, crawl run
// --retry-classes, the stack's retryClasses): comma-separated CLASS=TRIES, CLASS=TRIES/WAIT or
// CLASS=/WAIT, such as "timeout=2,http_5xx=6/10s,http_429=/30s". "" gives nil. Every bad entry
// is named in the one error.
func ParseClasses(v string) (map[errclass.Class]Curve, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[errclass.Class]Curve{}
	var errs []string
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		name, spec, ok := strings.Cut(entry, "=")
		if !ok {
			errs = append(errs, fmt.Sprintf("%q: want CLASS=TRIES or CLASS=TRIES/WAIT, such as http_5xx=6/10s", entry))
			continue
		}
		c, err := ParseClass(name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if _, dup := out[c]; dup {
			errs = append(errs, fmt.Sprintf("class %s set twice", c))
			continue
		}
		cv, err := parseCurve(spec)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", c, err))
			continue
		}
		out[c] = cv
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// parseCurve reads TRIES, TRIES/WAIT or /WAIT.
func parseCurve(s string) (Curve, error) {
	tries, wait, hasWait := strings.Cut(strings.TrimSpace(s), "/")
	var cv Curve
	if tries = strings.TrimSpace(tries); tries != "" {
		n, err := strconv.Atoi(tries)
		if err != nil || n < 1 {
			return Curve{}, fmt.Errorf("tries %q: want a whole number from 1 to %d", tries, MaxTries)
		}
		cv.Tries = n
	}
	if hasWait {
		d, err := time.ParseDuration(strings.TrimSpace(wait))
		if err != nil || d <= 0 {
			return Curve{}, fmt.Errorf("wait %q: want a duration such as 10s", wait)
		}
		cv.Wait = d
	}
	if cv == (Curve{}) {
		return Curve{}, fmt.Errorf("%q: want TRIES, TRIES/WAIT or /WAIT", s)
	}
	return cv, cv.Check()
}

// FormatClasses writes classes as ParseClasses reads them, in Tunable's order.
func FormatClasses(classes map[errclass.Class]Curve) string {
	var parts []string
	for _, c := range Tunable {
		cv, ok := classes[c]
		if !ok {
			continue
		}
		s := string(c) + "="
		if cv.Tries > 0 {
			s += strconv.Itoa(cv.Tries)
		}
		if cv.Wait > 0 {
			s += "/" + cv.Wait.String()
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}
