package cli

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/demo/demosite"
)

// built is the crawl command, built once per test binary by crawlBin.
var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// crawlBin builds cmd/crawl (once) as `make crawl` does and returns the binary's path: the tests
// about what a user sees run the command as a user does, with its own stdout, stderr and exit code.
func crawlBin(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "crawl-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "crawl")
		built.out, built.err = exec.Command("make", "-s", "-C", "../../..", "crawl", "CRAWL_BIN="+built.path).CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("build cmd/crawl: %v\n%s", built.err, built.out)
	}
	return built.path
}

// runBin runs the built crawl command with args in dir (the test's temp dir when empty) and env
// added to the environment, and returns its exit code, stdout and stderr.
func runBin(t *testing.T, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(crawlBin(t), args...)
	if dir == "" {
		dir = t.TempDir()
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run crawl %v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// interruptBin starts the built crawl command with args in dir, sends it an interrupt (as Ctrl-C
// does) once the site has served at least n pages, and returns its exit code, stdout and stderr.
func interruptBin(t *testing.T, dir string, site interface{ Fetched() int }, n int, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return signalBin(t, dir, site, n, os.Interrupt, args...)
}

// killBin is interruptBin with kill -9 (its exit code says nothing).
func killBin(t *testing.T, dir string, site interface{ Fetched() int }, n int, args ...string) {
	t.Helper()
	signalBin(t, dir, site, n, os.Kill, args...)
}

// signalBin starts the built crawl command with args in dir, sends it sig once the site has
// served at least n pages, and returns its exit code, stdout and stderr.
func signalBin(t *testing.T, dir string, site interface{ Fetched() int }, n int, sig os.Signal, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(crawlBin(t), args...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for site.Fetched() < n {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the site served only %d pages in 60s\n%s", site.Fetched(), errOut.String())
		}
		time.Sleep(2 * time.Millisecond) // a poll interval, with the deadline above
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// demoSeeds serves a generated site of pages on loopback for the test, and writes a seed file
// of its home page.
func demoSeeds(t *testing.T, pages, links, size int) (*demosite.Site, string) {
	t.Helper()
	site := demosite.New(pages, links, size)
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	return site, writeFile(t, "seeds.txt", srv.URL+"/\n")
}
