package e2etest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// CheckOptOut puts three entries on the opt-out list with `crawl optout add` (a URL prefix, a
// pattern and one URL of a site on loopback), then crawls the site with `crawl run --json` and
// runFlags. The site's own log of requests is the oracle: no URL on the list is requested, every
// other page is fetched, and `crawl failures` lists the listed URLs as skipped with class
// opted_out. `crawl optout list` shows the entries with their reasons, and `remove` takes one
// off. adminFlags choose the backend of the optout and failures commands.
func CheckOptOut(t testing.TB, main MainFunc, runFlags, adminFlags []string) {
	t.Helper()
	var log requestLog
	mux := http.NewServeMux()
	mux.Handle("/", log.serve(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<html><body><a href="/a">a</a> <a href="/private/x">x</a> <a href="/private/y">y</a>`+
			` <a href="/gone">gone</a> <a href="/users/12/">user</a> <a href="/users/me/">me</a></body></html>`)
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	run := runner(t, main)
	admin := func(wantCode int, args ...string) string {
		t.Helper()
		return run(wantCode, append(append([]string{args[0], args[1]}, adminFlags...), args[2:]...)...)
	}
	admin(0, "optout", "add", "--prefix", srv.URL+"/private/", "--reason", "owner's request")
	admin(0, "optout", "add", "--pattern", `/users/[0-9]+/$`)
	admin(0, "optout", "add", "--url", srv.URL+"/gone", "--reason", "purged")
	admin(2, "optout", "add", "--host", "a.test", "--url", srv.URL+"/a") // two entries at once

	var list []struct{ Kind, Value, Reason string }
	if err := json.Unmarshal([]byte(admin(0, "optout", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].Kind != "prefix" || list[0].Reason != "owner's request" || list[1].Kind != "pattern" || list[2].Value != srv.URL+"/gone" {
		t.Errorf("crawl optout list = %+v; want the prefix, the pattern and the URL", list)
	}

	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte(srv.URL+"/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(0, append(append([]string{"run", "--json", "--quiet", "--allow-net", "127.0.0.0/8"}, runFlags...), seeds)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct {
		Crawl   string           `json:"crawl"`
		Fetched int64            `json:"fetched"`
		Classes map[string]int64 `json:"classes"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("the summary is not JSON: %v\n%s", err, out)
	}
	got, _ := log.since(0)
	if want := []string{"/", "/a", "/robots.txt", "/users/me/"}; !slices.Equal(got, want) {
		t.Errorf("the site served %v; want %v (nothing on the opt-out list)", got, want)
	}
	if sum.Fetched != 3 || sum.Classes["opted_out"] != 4 {
		t.Errorf("summary: %d fetched, classes %v; want 3 fetched and 4 opted_out", sum.Fetched, sum.Classes)
	}
	failures := admin(0, "failures", "--json", sum.Crawl)
	skipped := map[string]bool{}
	for dec := json.NewDecoder(strings.NewReader(failures)); dec.More(); { // one object a line
		var f struct{ URL, State, Class string }
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("failures --json: %v\n%s", err, failures)
		}
		if f.State == "skipped" && f.Class == "opted_out" {
			skipped[strings.TrimPrefix(f.URL, srv.URL)] = true
		}
	}
	for _, p := range []string{"/private/x", "/private/y", "/gone", "/users/12/"} {
		if !skipped[p] {
			t.Errorf("crawl failures does not list %s as skipped, opted_out:\n%s", p, failures)
		}
	}

	admin(0, "optout", "remove", "--url", srv.URL+"/gone")
	admin(1, "optout", "remove", "--url", srv.URL+"/gone") // not there any more
	if err := json.Unmarshal([]byte(admin(0, "optout", "list", "--json")), &list); err != nil || len(list) != 2 {
		t.Errorf("after a removal the list is %+v, %v; want 2 entries", list, err)
	}
}
