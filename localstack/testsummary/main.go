// Command testsummary reads the `go test -v` log of an integration run on the local emulators,
// prints the summary line "integration: N passed, N failed, N skipped", and fails the run when a
// test skipped that the allowed-skips file does not name, or when no test passed at all.
// localstack/emulators.sh test runs it, so `make test` cannot pass with its emulators missing:
// every test would skip or fail, and a skip is a failure unless the file allows it.
//
//	testsummary -allowed localstack/allowed-skips.txt -exit $go_test_exit_code test.log
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

func main() {
	allowedPath := flag.String("allowed", "localstack/allowed-skips.txt", "the file naming the tests that may skip")
	goExit := flag.Int("exit", 0, "the exit code of the go test run")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: testsummary [-allowed FILE] [-exit CODE] GO_TEST_V_LOG")
		os.Exit(2)
	}
	allowed, err := readAllowed(*allowedPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		os.Exit(2)
	}
	defer f.Close()
	res, err := parseLog(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: read %s: %v\n", flag.Arg(0), err)
		os.Exit(2)
	}
	summary, problems := judge(res, allowed, *allowedPath, *goExit)
	fmt.Println(summary)
	for _, p := range problems {
		fmt.Println("integration: FAIL: " + p)
	}
	if len(problems) > 0 || *goExit != 0 {
		os.Exit(1)
	}
}

// Result is what a `go test -v` log says: every test and subtest counts once.
type Result struct {
	Passed, Failed int
	Skipped        []string // the full names of the skipped tests, in log order
}

var (
	resultLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)
	// A package that did not build, or whose test binary could not start, has no --- FAIL line.
	brokenPackage = regexp.MustCompile(`^FAIL\s.*\[(build|setup) failed\]`)
)

// parseLog counts the results in a `go test -v` log.
func parseLog(r io.Reader) (Result, error) {
	var res Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if brokenPackage.MatchString(line) {
			res.Failed++
			continue
		}
		m := resultLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch m[1] {
		case "PASS":
			res.Passed++
		case "FAIL":
			res.Failed++
		case "SKIP":
			res.Skipped = append(res.Skipped, m[2])
		}
	}
	return res, sc.Err()
}

// parseAllowed reads the allowed-skips file: one full test name per line followed by a `#`
// comment that says why it may skip; blank lines and lines that start with `#` are ignored.
func parseAllowed(r io.Reader) (map[string]bool, error) {
	allowed := map[string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, why, _ := strings.Cut(line, "#")
		name, why = strings.TrimSpace(name), strings.TrimSpace(why)
		if strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("line %d: %q is not one test name", n, name)
		}
		if why == "" {
			return nil, fmt.Errorf("line %d: say why %s may skip, after a #", n, name)
		}
		allowed[name] = true
	}
	return allowed, sc.Err()
}

func readAllowed(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	allowed, err := parseAllowed(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return allowed, nil
}

// judge returns the summary line and what fails the run besides go test's own exit code: a skip
// that allowedPath does not allow, and a run in which nothing passed. A non-zero goExit with no
// failed test (a panic, a timeout) counts as one failure.
func judge(res Result, allowed map[string]bool, allowedPath string, goExit int) (string, []string) {
	failed := res.Failed
	if goExit != 0 && failed == 0 {
		failed = 1
	}
	summary := fmt.Sprintf("integration: %d passed, %d failed, %d skipped", res.Passed, failed, len(res.Skipped))
	var problems []string
	for _, name := range res.Skipped {
		if !allowed[name] {
			problems = append(problems, fmt.Sprintf("%s skipped, and %s does not allow it: on the emulators "+
				"only tests that need LocalStack may skip (see its reason above or in the full log)", name, allowedPath))
		}
	}
	if res.Passed == 0 {
		problems = append(problems, "no test passed: check the packages and the -run pattern, "+
			"and that the emulators started")
	}
	return summary, problems
}
