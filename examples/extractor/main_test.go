package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/app/cli"
	"github.com/crawlstack/crawlstack/shared/crawl/records"
)

// The example's extractor runs in a crawl of a spec that names it: each record carries its value,
// and null for a page with no words.
func TestTheRegisteredExtractorFillsItsField(t *testing.T) {
	long := strings.Repeat("word ", 450) // 450 words: 3 minutes at 200 a minute
	pages := map[string]string{
		"/":      `<h1>Home</h1><a href="/long">long</a><a href="/empty">empty</a><article>` + long + `</article><p>not counted</p>`,
		"/long":  `<h1>Long</h1><p>` + long + long + `</p>`, // no article: the body's 900 words and the heading's one
		"/empty": `<body></body>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><body>"+body+"</body></html>")
	}))
	defer srv.Close()
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	body := "version: 1\nseeds: [" + srv.URL + "/]\nextract:\n  minutes: {extractor: reading_time}\n"
	if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--host-rps", "0",
		"--json", "--quiet", spec}, &stdout, &stderr)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var sum cli.Summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	files, err := filepath.Glob(filepath.Join(sum.Records, "dt=*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no records under %s: %v", sum.Records, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var r records.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			v, ok := r.Data["minutes"]
			if !ok {
				t.Errorf("%s: no minutes field in %v", r.URL, r.Data)
			}
			got[strings.TrimPrefix(r.URL, srv.URL)] = v
		}
	}
	want := map[string]any{"/": 3.0, "/long": 5.0, "/empty": nil}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("minutes by page %v, want %v", got, want)
	}
}
