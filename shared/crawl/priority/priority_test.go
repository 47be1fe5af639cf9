package priority

import (
	"slices"
	"strings"
	"testing"
)

func depth(n int) *int { return &n }

func TestRankTakesTheFirstRuleThatHolds(t *testing.T) {
	r, err := Compile([]Rule{
		{Pattern: "/product/", Priority: "high"},
		{From: "/archive/", Priority: "low"},
		{MaxDepth: depth(0), Priority: "high"},
		{Pattern: "/archive/", MaxDepth: depth(2), Priority: "low"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url, from string
		depth     int
		want      Level
	}{
		{"http://a.test/product/1", "http://a.test/archive/", 3, High}, // the first rule wins
		{"http://a.test/x", "http://a.test/archive/2020", 1, Low},
		{"http://a.test/", "", 0, High}, // a seed: no from, depth 0
		{"http://a.test/archive/1", "http://a.test/", 2, Low},
		{"http://a.test/archive/1", "http://a.test/", 3, Normal}, // too deep for the last rule
		{"http://a.test/other", "http://a.test/", 1, Normal},
	}
	for _, tt := range tests {
		if got := r.Rank(tt.url, tt.from, tt.depth); got != tt.want {
			t.Errorf("Rank(%s, from %q, depth %d) = %d, want %d", tt.url, tt.from, tt.depth, got, tt.want)
		}
	}
}

func TestOrderPutsHighFirstAndKeepsTheOrderWithinALevel(t *testing.T) {
	r, err := Compile([]Rule{{Pattern: "/p/", Priority: "high"}, {Pattern: "/old/", Priority: "low"}})
	if err != nil {
		t.Fatal(err)
	}
	urls := []string{"/old/1", "/a", "/p/1", "/old/2", "/b", "/p/2"}
	got := r.Order(urls, "", 1)
	if want := []int{2, 5, 1, 4, 0, 3}; !slices.Equal(got, want) {
		t.Errorf("Order = %v, want %v", got, want)
	}
	var none *Ranker
	if got := none.Order(urls, "", 1); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5}) {
		t.Errorf("a nil Ranker's Order = %v, want the message's", got)
	}
}

func TestBadRulesAreRefused(t *testing.T) {
	tests := []struct {
		rules []Rule
		want  string
	}{
		{[]Rule{{Pattern: "/a/", Priority: "urgent"}}, `priority rule 1: priority "urgent": want high, normal or low`},
		{[]Rule{{Pattern: "/a/", Priority: "high"}, {Priority: "high"}}, "priority rule 2: no condition"},
		{[]Rule{{From: "(", Priority: "low"}}, `priority rule 1: from "("`},
		{[]Rule{{MaxDepth: depth(-1), Priority: "low"}}, "priority rule 1: max_depth -1"},
		{make([]Rule, MaxRules+1), "51 priority rules, over the limit of 50"},
	}
	for _, tt := range tests {
		if _, err := Compile(tt.rules); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Compile(%+v) = %v, want %q", tt.rules, err, tt.want)
		}
	}
}
