package pipeline_test

import (
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
)

// TestNewOnly builds each handler alone, as a Lambda function's init does: the others are not
// built.
func TestNewOnly(t *testing.T) {
	for _, name := range []string{pipeline.Schedule, pipeline.Fetch, pipeline.Parse} {
		t.Run(name, func(t *testing.T) {
			h, err := pipeline.NewOnly(pipeline.DefaultConfig(), pipeline.Ports{}, nil, name)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			got := map[string]bool{pipeline.Schedule: h.Schedule != nil, pipeline.Fetch: h.Fetch != nil, pipeline.Parse: h.Parse != nil}
			for n, built := range got {
				if built != (n == name) {
					t.Errorf("%s built: %v", n, built)
				}
			}
			if h.State == nil {
				t.Error("no crawl state")
			}
		})
	}
	if _, err := pipeline.NewOnly(pipeline.DefaultConfig(), pipeline.Ports{}, nil, "index"); err == nil || !strings.Contains(err.Error(), `"index"`) {
		t.Errorf("an unknown handler: %v, want an error naming it", err)
	}
}

// A pattern that does not compile, or an address range that does not parse, fails the build of
// the handlers with an error that names the setting, rather than crawl without it.
func TestABadSettingIsAnErrorNamingIt(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*pipeline.Config)
		want string
	}{
		{"include", func(c *pipeline.Config) { c.Include = []string{`^https://ok\.test/`, `(`} }, "include"},
		{"exclude", func(c *pipeline.Config) { c.Exclude = []string{`[z-a]`} }, "exclude"},
		{"allow-net", func(c *pipeline.Config) { c.AllowNets = []string{"10.0.0.0/33"} }, "allow-net"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := pipeline.DefaultConfig()
			c.set(&cfg)
			for _, name := range []string{pipeline.Schedule, pipeline.Fetch, pipeline.Parse} {
				h, err := pipeline.NewOnly(cfg, pipeline.Ports{}, nil, name)
				if err == nil {
					h.Close()
					t.Fatalf("%s built with a bad %s", name, c.name)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: error %q does not name %s", name, err, c.want)
				}
			}
		})
	}
}
