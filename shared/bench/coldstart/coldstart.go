// Package coldstart measures each crawler function's init under the Lambda Runtime Interface
// Emulator: the time from the bootstrap's start to its first request for an event, with the
// environment the synthesized template gives the function. It is what `make coldstart` prints.
package coldstart

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/testkit/cfntemplate"
	"github.com/crawlstack/crawlstack/shared/testkit/lambdarie"
	"github.com/crawlstack/crawlstack/shared/testkit/stackrun"
)

// Config says what to measure.
type Config struct {
	Template string // cdk synth's Crawlstack.template.json
	Dist     string // <dist>/<fn>/bootstrap, built for the host
	RIE      string // the aws-lambda-rie binary
	Runs     int
}

// Result is one function's init durations.
type Result struct {
	Function string
	Inits    []time.Duration
}

// Median is the median init.
func (r Result) Median() time.Duration { return lambdarie.Median(r.Inits) }

// payload is an SQS event with no records: a function's answer to it does not matter, only that
// the bootstrap's init ran before it.
const payload = `{"Records":[]}`

// Measure cold-starts each function of the template cfg.Runs times. The functions get the
// template's environment with names that no service answers for: their init calls no AWS API,
// and the first invocation touches none.
func Measure(ctx context.Context, cfg Config) ([]Result, error) {
	tmpl, err := cfntemplate.Load(cfg.Template)
	if err != nil {
		return nil, err
	}
	const region, account = "us-east-1", "000000000000"
	st, err := stackrun.Read(tmpl, stackrun.Offline(tmpl, "coldstart", region, account))
	if err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	names := make([]string, 0, len(st.Functions))
	for n := range st.Functions {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Result
	for _, n := range names {
		f := st.Functions[n]
		env := []string{"AWS_ENDPOINT_URL=http://127.0.0.1:9", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
		for k, v := range f.Env {
			env = append(env, k+"="+v)
		}
		inits, err := lambdarie.ColdStarts(ctx, lambdarie.Options{RIE: cfg.RIE, Bootstrap: filepath.Join(cfg.Dist, n, "bootstrap"), Env: env},
			[]byte(payload), cfg.Runs)
		if err != nil {
			return nil, err
		}
		out = append(out, Result{Function: n, Inits: inits})
	}
	return out, nil
}

// Report writes one line per function: the median init and every run's.
func Report(w io.Writer, rs []Result) {
	for _, r := range rs {
		runs := make([]string, len(r.Inits))
		for i, d := range r.Inits {
			runs[i] = ms(d)
		}
		fmt.Fprintf(w, "%-8s init %s ms (median of %d: %s ms)\n", r.Function, ms(r.Median()), len(r.Inits), strings.Join(runs, ", "))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }
