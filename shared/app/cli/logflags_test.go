package cli

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// TestLogFlags: --log-format json --log-level debug makes the handlers' lines JSON objects at
// debug level and up; the default (warn, text) logs nothing for a clean crawl.
func TestLogFlags(t *testing.T) {
	srv := httptest.NewServer(demosite.New(3, 2, 200))
	defer srv.Close()
	seeds := writeFile(t, "seeds.txt", srv.URL+"/\n")
	code, _, stderr := runMain(t, "run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--host-rps", "0",
		"--quiet", "--log-format", "json", "--log-level", "debug", seeds)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	levels := map[string]int{}
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var line struct{ Level, Msg, Fn string }
		if err := json.Unmarshal([]byte(l), &line); err != nil || line.Msg == "" {
			t.Errorf("not a JSON log line (%v): %s", err, l)
		}
		levels[line.Level]++
	}
	if levels["DEBUG"] == 0 || levels["INFO"] == 0 {
		t.Errorf("levels %v: want debug and info lines\n%s", levels, stderr)
	}
	code, _, stderr = runMain(t, "run", "--state", t.TempDir(), "--allow-net", "127.0.0.0/8", "--host-rps", "0", "--quiet", seeds)
	if code != ExitOK || strings.Contains(stderr, "level=") {
		t.Errorf("exit %d; the default level logged:\n%s", code, stderr)
	}
}
