package pipeline

import (
	"strings"
	"testing"
)

// crawlRules, which NewOnly reaches only with a validated Config, still refuses a bad pattern and
// says which list it is in, where it once dropped the error and crawled without the pattern.
func TestCrawlRulesRefuseABadPattern(t *testing.T) {
	for _, c := range []struct {
		name             string
		include, exclude []string
		want             string
	}{
		{"include", []string{`(`}, nil, "include patterns"},
		{"exclude", nil, []string{`a**`}, "exclude patterns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Include, cfg.Exclude = c.include, c.exclude
			_, err := crawlRules(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %s", err, c.want)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.Include, cfg.Exclude = []string{`^https://a\.test/`}, []string{`\.pdf$`}
	rules, err := crawlRules(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules.Include) != 1 || rules.Include[0].String() != `^https://a\.test/` || len(rules.Exclude) != 1 || rules.Exclude[0].String() != `\.pdf$` {
		t.Errorf("rules include %v, exclude %v; want the configured patterns", rules.Include, rules.Exclude)
	}
}

// NewFetching, which does not validate its Config, refuses an address range that does not parse
// instead of guarding with none.
func TestNewFetchingRefusesABadAllowNet(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AllowNets = []string{"not-a-cidr"}
	fx, err := NewFetching(cfg)
	if err == nil {
		fx.Close()
		t.Fatal("NewFetching accepted a bad allow-net")
	}
	if !strings.Contains(err.Error(), "allow-net") {
		t.Errorf("error %q does not name allow-net", err)
	}
}
