package e2etest

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

// MainFunc runs the crawl command with args and returns its exit code and output (cli.Main).
type MainFunc func(args ...string) (code int, stdout, stderr string)

// statusJSON is what the checks read of `crawl status --json CRAWL`: the documented fields,
// decoded apart from the command's own types.
type statusJSON struct {
	Crawl   string   `json:"crawl"`
	State   string   `json:"state"`
	Seen    int64    `json:"seen"`
	Fetched int64    `json:"fetched"`
	Pending int64    `json:"pending"`
	Waiting []string `json:"waiting"`
	Queues  map[string]struct {
		Visible  int `json:"visible"`
		InFlight int `json:"inFlightOrDelayed"`
	} `json:"queues"`
}

// CheckAdminCommands drives `crawl status`, `pause`, `resume` and `stop` on a finished crawl that
// fetched fetched pages, with flags choosing the backend: the listing names the crawl, its status
// follows each change, a stop is final, and an unknown crawl is refused by name.
func CheckAdminCommands(t testing.TB, main MainFunc, crawl string, fetched int64, flags ...string) {
	t.Helper()
	run := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := main(append(append([]string{args[0]}, flags...), args[1:]...)...)
		if code != wantCode {
			t.Fatalf("crawl %s: exit %d, want %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, wantCode, stdout, stderr)
		}
		return stdout, stderr
	}
	status := func(wantState string) statusJSON {
		t.Helper()
		out, _ := run(0, "status", "--json", crawl)
		var s statusJSON
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		if s.Crawl != crawl || s.State != wantState || s.Fetched != fetched || s.Pending != 0 {
			t.Errorf("status = %+v: want crawl %s %s, %d fetched, none pending", s, crawl, wantState, fetched)
		}
		for _, q := range []string{"schedule", "fetch", "fetchslow", "parse", "schedule-dlq", "fetch-dlq", "parse-dlq"} {
			if _, ok := s.Queues[q]; !ok {
				t.Errorf("status shows no depth of the %s queue: %v", q, s.Queues)
			}
		}
		return s
	}
	out, _ := run(0, "status", "--json")
	var list []struct{ Crawl, State string }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("status --json with no crawl: %v\n%s", err, out)
	}
	if len(list) != 1 || list[0].Crawl != crawl || list[0].State != "finished" {
		t.Errorf("crawl listing = %+v: want %s alone, finished", list, crawl)
	}
	if listed, _ := run(0, "list", "--json"); listed != out {
		t.Errorf("crawl list --json:\n%s\nwant what crawl status --json lists:\n%s", listed, out)
	}
	if out, _ := run(0, "status"); !strings.Contains(out, crawl) || !strings.Contains(out, "finished") {
		t.Errorf("crawl status lists:\n%s\nwant %s, finished", out, crawl)
	}
	status("finished")

	run(0, "pause", crawl)
	if s := status("paused"); len(s.Waiting) == 0 || !strings.Contains(s.Waiting[0], "paused") {
		t.Errorf("a paused crawl waits for %q, want its pause named", s.Waiting)
	}
	if out, _ := run(0, "status", crawl); !strings.Contains(out, crawl+": paused") || !strings.Contains(out, "fetched "+itoa(fetched)) {
		t.Errorf("status screen:\n%s\nwant the crawl paused with %d fetched", out, fetched)
	}
	run(0, "resume", crawl)
	status("finished")
	run(0, "stop", crawl)
	status("stopped")
	if _, stderr := run(1, "resume", crawl); !strings.Contains(stderr, "stopped") {
		t.Errorf("resume of a stopped crawl says %q, want it named stopped", stderr)
	}
	if _, stderr := run(1, "pause", "no-such-crawl"); !strings.Contains(stderr, "no such crawl") {
		t.Errorf("pause of an unknown crawl says %q", stderr)
	}
	if _, stderr := run(1, "status", "no-such-crawl"); !strings.Contains(stderr, "no crawl no-such-crawl") {
		t.Errorf("status of an unknown crawl says %q", stderr)
	}
	run(2, "stop")
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// CheckFailuresCommand drives `crawl failures` on a finished crawl whose URLs without a page are
// want (URL -> class), with flags choosing the backend: the table, JSON lines and CSV all list
// exactly those, --class keeps only the named classes, and an unknown class is refused.
func CheckFailuresCommand(t testing.TB, main MainFunc, crawl string, want map[string]string, flags ...string) {
	t.Helper()
	run := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := main(append(append([]string{"failures"}, flags...), args...)...)
		if code != wantCode {
			t.Fatalf("crawl failures %s: exit %d, want %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, wantCode, stdout, stderr)
		}
		return stdout, stderr
	}
	same := func(how string, got map[string]string, want map[string]string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s lists %v, want %v", how, got, want)
			return
		}
		for u, c := range want {
			if got[u] != c {
				t.Errorf("%s lists %v, want %v", how, got, want)
				return
			}
		}
	}
	out, _ := run(0, "--json", crawl)
	got := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var f struct{ URL, State, Class, Detail string }
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("failures --json: %v\n%s", err, out)
		}
		if f.Detail == "" || f.State == "" {
			t.Errorf("failure %+v: want its state and detail", f)
		}
		got[f.URL] = f.Class
	}
	same("failures --json", got, want)

	out, _ = run(0, "--csv", crawl)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) == 0 || strings.Join(rows[0], ",") != "url,state,class,detail,depth" {
		t.Fatalf("failures --csv: %v\n%s", err, out)
	}
	got = map[string]string{}
	for _, r := range rows[1:] {
		got[r[0]] = r[2]
	}
	same("failures --csv", got, want)

	out, _ = run(0, crawl)
	for u := range want {
		if !strings.Contains(out, u) {
			t.Errorf("failures lists:\n%s\nwant %s", out, u)
		}
	}
	// --class keeps the URLs of the class named.
	for u, c := range want {
		out, _ = run(0, "--json", "--class", c, crawl)
		n := strings.Count(out, "\n")
		wantN := 0
		for _, c2 := range want {
			if c2 == c {
				wantN++
			}
		}
		if n != wantN || !strings.Contains(out, u) {
			t.Errorf("failures --class %s lists:\n%s\nwant the %d URLs of that class", c, out, wantN)
		}
	}
	if _, stderr := run(2, "--class", "no_such_class", crawl); !strings.Contains(stderr, "unknown class") {
		t.Errorf("an unknown --class says %q", stderr)
	}
}
