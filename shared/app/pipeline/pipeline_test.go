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
