package cli

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestSecretHeadersReachTheSiteAndNoStore: a spec names its Authorization and a header of its
// own by reference (an environment variable, a file). The site receives their values; no byte
// that the crawl stored (the state file and its log, every blob: spec.json, WARC files, records,
// reports) and no line it printed holds them. spec.json keeps the references, and each WARC request
// record the header names with the redaction value. A spec that writes Authorization's value
// itself is refused with an error that names the header, not the value.
func TestSecretHeadersReachTheSiteAndNoStore(t *testing.T) {
	const token, apiKey = "Bearer tok-5ecret-81f3", "key-5ecret-c02e"
	var mu sync.Mutex
	seen := map[string][2]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = [2]string{r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")}
		mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `<html><body><a href="/a">a</a></body></html>`)
	}))
	defer srv.Close()
	t.Setenv("CRAWL_TEST_SITE_TOKEN", token)
	keyFile := writeFile(t, "key.txt", apiKey+"\n")
	state := t.TempDir()
	spec := writeFile(t, "site.yaml", fmt.Sprintf("version: 1\nseeds: [%s/]\nheaders:\n  Accept-Language: en\n"+
		"  Authorization: {secret: \"env:CRAWL_TEST_SITE_TOKEN\"}\n  X-Api-Key: {secret: \"file:%s\"}\n", srv.URL, keyFile))
	code, stdout, stderr := runMain(t, "run", "--json", "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--log-level", "debug", "--state", state, spec)
	if code != 0 {
		t.Fatalf("crawl run: exit %d\n%s", code, stderr)
	}
	mu.Lock()
	for _, p := range []string{"/robots.txt", "/", "/a"} {
		if got := seen[p]; got != [2]string{token, apiKey} {
			t.Errorf("the site saw %s with Authorization %q, X-Api-Key %q; want the secrets' values", p, got[0], got[1])
		}
	}
	mu.Unlock()

	secrets := []string{token, "tok-5ecret-81f3", apiKey}
	for name, b := range map[string][]byte{"stdout": []byte(stdout), "stderr": []byte(stderr)} {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("crawl run's %s holds a secret's value", name)
			}
		}
	}
	specs, warcs := 0, 0
	err := filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(state, p)
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return err
			}
			if b, err = io.ReadAll(zr); err != nil {
				return err
			}
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("the stored file %s holds a secret's value", rel)
			}
		}
		switch {
		case strings.HasSuffix(p, "spec.json"):
			specs++
			if !bytes.Contains(b, []byte(`"Authorization":"env:CRAWL_TEST_SITE_TOKEN"`)) || !bytes.Contains(b, []byte(`"X-Api-Key":"file:`)) {
				t.Errorf("%s does not hold the references: %s", rel, b)
			}
		case strings.HasSuffix(p, ".warc.gz"):
			warcs++
			if n := bytes.Count(b, []byte("Authorization: [redacted]\r\n")); n == 0 || n != bytes.Count(b, []byte("X-Api-Key: [redacted]\r\n")) {
				t.Errorf("%s: %d request records with Authorization redacted; want every one, X-Api-Key too", rel, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if specs != 1 || warcs == 0 {
		t.Errorf("read %d spec.json and %d WARC files, want 1 and some", specs, warcs)
	}

	literal := writeFile(t, "literal.yaml", fmt.Sprintf("version: 1\nseeds: [%s/]\nheaders:\n  Authorization: %q\n", srv.URL, token))
	code, stdout, stderr = runMain(t, "run", "--allow-net", "127.0.0.0/8", "--state", t.TempDir(), literal)
	if code != ExitUsage || !strings.Contains(stderr, "headers.Authorization") || strings.Contains(stdout+stderr, "5ecret") {
		t.Errorf("a spec with Authorization's value: exit %d, want %d with an error that names the header and not its value\n%s", code, ExitUsage, stderr)
	}
}
