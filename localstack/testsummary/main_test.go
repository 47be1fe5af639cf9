package main

import (
	"slices"
	"strings"
	"testing"
)

// A log in the shape `go test -race -v -run Integration` writes for two packages: a parallel
// subtest, a skip with its reason, a subtest skip, and a package that did not build.
const canned = `=== RUN   TestIntegrationQueue
=== RUN   TestIntegrationQueue/SendReceiveDelete
=== PAUSE TestIntegrationQueue/SendReceiveDelete
=== CONT  TestIntegrationQueue/SendReceiveDelete
=== RUN   TestIntegrationQueue/Redrive
    queuetest.go:75: backend lacks redrive
--- PASS: TestIntegrationQueue (0.41s)
    --- PASS: TestIntegrationQueue/SendReceiveDelete (0.40s)
    --- SKIP: TestIntegrationQueue/Redrive (0.00s)
=== RUN   TestIntegrationS3Events
    events_test.go:12: S3 event notifications need LocalStack
--- SKIP: TestIntegrationS3Events (0.00s)
=== RUN   TestIntegrationBroken
    table_test.go:40: put: connection refused
--- FAIL: TestIntegrationBroken (1.02s)
FAIL
FAIL	example.com/table	1.2s
# example.com/blob
blob/x_test.go:3:1: syntax error
FAIL	example.com/blob [build failed]
2026/12/01 08:00:00 WARN failed to close HTTP response body --- PASS: not a result
`

func TestParseLog(t *testing.T) {
	got, err := parseLog(strings.NewReader(canned))
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Passed: 2, Failed: 2, Skipped: []string{"TestIntegrationQueue/Redrive", "TestIntegrationS3Events"}}
	if got.Passed != want.Passed || got.Failed != want.Failed || !slices.Equal(got.Skipped, want.Skipped) {
		t.Errorf("parseLog = %+v, want %+v", got, want)
	}
}

func TestParseAllowed(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		want    []string
		wantErr string
	}{
		{"names with reasons", "# header\n\nTestIntegrationS3Events  # needs S3 notifications\n" +
			"TestIntegrationQueue/Redrive # fauxqs\n", []string{"TestIntegrationQueue/Redrive", "TestIntegrationS3Events"}, ""},
		{"only comments", "# nothing may skip\n", nil, ""},
		{"no reason", "TestIntegrationS3Events\n", nil, "line 1: say why TestIntegrationS3Events may skip"},
		{"empty reason", "# x\nTestIntegrationS3Events #  \n", nil, "line 2: say why"},
		{"two names", "TestA TestB # why\n", nil, `line 1: "TestA TestB" is not one test name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAllowed(strings.NewReader(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseAllowed error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for n := range got {
				names = append(names, n)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Errorf("parseAllowed = %v, want %v", names, tt.want)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	const path = "localstack/allowed-skips.txt"
	allowS3 := map[string]bool{"TestIntegrationS3Events": true}
	tests := []struct {
		name         string
		res          Result
		allowed      map[string]bool
		goExit       int
		wantSummary  string
		wantProblems []string // one substring per problem, in order
	}{
		{"all passed", Result{Passed: 5}, nil, 0, "integration: 5 passed, 0 failed, 0 skipped", nil},
		{"allowed skip", Result{Passed: 5, Skipped: []string{"TestIntegrationS3Events"}}, allowS3, 0,
			"integration: 5 passed, 0 failed, 1 skipped", nil},
		{"skip not allowed", Result{Passed: 5, Skipped: []string{"TestIntegrationS3Events", "TestIntegrationQueue/Redrive"}}, allowS3, 0,
			"integration: 5 passed, 0 failed, 2 skipped",
			[]string{"TestIntegrationQueue/Redrive skipped, and localstack/allowed-skips.txt does not allow it"}},
		{"a subtest is not allowed by its parent's name", Result{Passed: 1, Skipped: []string{"TestIntegrationS3Events/put"}}, allowS3, 0,
			"integration: 1 passed, 0 failed, 1 skipped", []string{"TestIntegrationS3Events/put skipped"}},
		{"nothing ran", Result{}, nil, 0, "integration: 0 passed, 0 failed, 0 skipped", []string{"no test passed"}},
		{"every test skipped", Result{Skipped: []string{"TestIntegrationA"}}, nil, 0,
			"integration: 0 passed, 0 failed, 1 skipped", []string{"TestIntegrationA skipped", "no test passed"}},
		{"a panic counts as a failure", Result{Passed: 3}, nil, 2, "integration: 3 passed, 1 failed, 0 skipped", nil},
		{"failures are counted, not judged", Result{Passed: 3, Failed: 2}, nil, 1, "integration: 3 passed, 2 failed, 0 skipped", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			summary, problems := judge(tt.res, tt.allowed, path, tt.goExit)
			if summary != tt.wantSummary {
				t.Errorf("summary = %q, want %q", summary, tt.wantSummary)
			}
			if len(problems) != len(tt.wantProblems) {
				t.Fatalf("problems = %q, want %d containing %q", problems, len(tt.wantProblems), tt.wantProblems)
			}
			for i, want := range tt.wantProblems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], want)
				}
			}
		})
	}
}
