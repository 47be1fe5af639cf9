package scope

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

// TrapRules are heuristics against spider traps: sites that generate endless distinct URLs
// (calendars, session paths, relative-link loops, faceted search). A zero field disables its
// rule. The defaults (DefaultTraps) are loose enough for ordinary sites.
type TrapRules struct {
	// MaxPathSegments is the most path segments ("/a/b/c" has 3). Default 32.
	MaxPathSegments int
	// MaxRepeatedSegment is the most times one segment may occur in a path, anywhere: it catches
	// /x/x/x/x and /a/b/a/b/a/b/a/b loops from relative links. Default 3.
	MaxRepeatedSegment int
	// MaxQueryParams is the most query parameters. Default 24.
	MaxQueryParams int
	// MaxURLLength is the most bytes of the URL string. Default 1536 (urlnorm refuses over 2048).
	MaxURLLength int
	// CalendarYears is how many years after now a calendar-like URL may point to. Default 3.
	CalendarYears int
	// CalendarPastYears is how many years before now a calendar-like URL may point to, so that
	// old blog archives stay in. Default 50.
	CalendarPastYears int
}

// DefaultTraps returns the default trap rules.
func DefaultTraps() TrapRules {
	return TrapRules{
		MaxPathSegments:    32,
		MaxRepeatedSegment: 3,
		MaxQueryParams:     24,
		MaxURLLength:       1536,
		CalendarYears:      3,
		CalendarPastYears:  50,
	}
}

// Calendar-like dates: a year followed by a month (2026/11, 2026-11-29, 2026_11) or a compact
// YYYYMMDD date, not inside a longer run of digits.
var (
	yearMonth = regexp.MustCompile(`(?:^|[^0-9])([12][0-9]{3})[-/_.](0?[1-9]|1[0-2])(?:[^0-9]|$)`)
	compact   = regexp.MustCompile(`(?:^|[^0-9])([12][0-9]{3})(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])(?:[^0-9]|$)`)
	bareYear  = regexp.MustCompile(`^[12][0-9]{3}$`)
)

// Check returns an error of class Trap when u looks like a spider trap, naming the rule.
func (t TrapRules) Check(u *url.URL, now time.Time) error {
	s := u.String()
	if t.MaxURLLength > 0 && len(s) > t.MaxURLLength {
		return errclass.Errorf(errclass.Trap, "url is %d bytes, over %d", len(s), t.MaxURLLength)
	}
	segs := strings.FieldsFunc(u.EscapedPath(), func(r rune) bool { return r == '/' })
	if t.MaxPathSegments > 0 && len(segs) > t.MaxPathSegments {
		return errclass.Errorf(errclass.Trap, "%d path segments, over %d", len(segs), t.MaxPathSegments)
	}
	if t.MaxRepeatedSegment > 0 {
		count := make(map[string]int, len(segs))
		for _, seg := range segs {
			count[seg]++
			if count[seg] > t.MaxRepeatedSegment {
				return errclass.Errorf(errclass.Trap, "path segment %q repeated over %d times", seg, t.MaxRepeatedSegment)
			}
		}
	}
	var params []string
	if u.RawQuery != "" {
		params = strings.Split(u.RawQuery, "&")
	}
	if t.MaxQueryParams > 0 && len(params) > t.MaxQueryParams {
		return errclass.Errorf(errclass.Trap, "%d query parameters, over %d", len(params), t.MaxQueryParams)
	}
	if t.CalendarYears > 0 || t.CalendarPastYears > 0 {
		for _, y := range calendarYears(u.EscapedPath(), params) {
			ahead := y - now.Year()
			if t.CalendarYears > 0 && ahead > t.CalendarYears {
				return errclass.Errorf(errclass.Trap, "calendar year %d is over %d years ahead", y, t.CalendarYears)
			}
			if t.CalendarPastYears > 0 && -ahead > t.CalendarPastYears {
				return errclass.Errorf(errclass.Trap, "calendar year %d is over %d years back", y, t.CalendarPastYears)
			}
		}
	}
	return nil
}

// calendarYears returns the years of the calendar-like dates in an escaped path and query:
// year-month and YYYYMMDD dates anywhere, and four-digit values of parameters named like a year.
func calendarYears(path string, params []string) []int {
	var years []int
	add := func(s string) {
		for _, re := range []*regexp.Regexp{yearMonth, compact} {
			for _, m := range re.FindAllStringSubmatch(s, -1) {
				if y, err := strconv.Atoi(m[1]); err == nil {
					years = append(years, y)
				}
			}
		}
	}
	add(path)
	for _, p := range params {
		name, value, _ := strings.Cut(p, "=")
		add(value)
		switch strings.ToLower(name) {
		case "year", "yr", "y", "jahr", "annee":
			if bareYear.MatchString(value) {
				y, _ := strconv.Atoi(value)
				years = append(years, y)
			}
		}
	}
	return years
}
