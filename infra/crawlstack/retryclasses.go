package crawlstack

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// retryClasses are the error classes whose tries and wait retryClasses may set: those the
// crawler tries again (the root module's retry.Tunable, which the functions check the value
// against again at init, pipeline.FromEnv).
var retryClasses = []string{"connect", "timeout", "http_429", "http_5xx", "robots_unavailable"}

// retryClassProblems says what is wrong with a retryClasses value, one phrase per bad entry; nil
// when it is good. It reads the value as the functions do (retry.ParseClasses): CLASS=TRIES,
// CLASS=TRIES/WAIT or CLASS=/WAIT, comma-separated, tries 1 to 20 and a wait above 0 and at most
// a minute.
func retryClassProblems(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		name, curve, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%q: want CLASS=TRIES or CLASS=TRIES/WAIT, such as http_5xx=6/10s", entry))
			continue
		case !slices.Contains(retryClasses, name):
			msg := fmt.Sprintf("%q is not a class that is tried again", name)
			if near := nearestKey(name, retryClasses); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			out = append(out, msg+" (want one of "+strings.Join(retryClasses, ", ")+")")
			continue
		case seen[name]:
			out = append(out, fmt.Sprintf("class %s set twice", name))
			continue
		}
		seen[name] = true
		if p := curveProblem(curve); p != "" {
			out = append(out, name+": "+p)
		}
	}
	return out
}

// curveProblem checks TRIES, TRIES/WAIT or /WAIT.
func curveProblem(s string) string {
	tries, wait, hasWait := strings.Cut(strings.TrimSpace(s), "/")
	if tries = strings.TrimSpace(tries); tries == "" && !hasWait {
		return fmt.Sprintf("%q: want TRIES, TRIES/WAIT or /WAIT", s)
	}
	if tries != "" {
		if n, err := strconv.Atoi(tries); err != nil || n < 1 || n > 20 {
			return fmt.Sprintf("tries %q: want 1 to 20 requests", tries)
		}
	}
	if hasWait {
		if d, err := time.ParseDuration(strings.TrimSpace(wait)); err != nil || d <= 0 || d > time.Minute {
			return fmt.Sprintf("wait %q: want a duration above 0 and at most 1m, such as 10s", wait)
		}
	}
	return ""
}
