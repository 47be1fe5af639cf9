// Command coldstart prints each crawler function's init duration under the Lambda Runtime
// Interface Emulator, the median of several cold starts (`make coldstart`). See package coldstart.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/crawlstack/crawlstack/shared/bench/coldstart"
)

func main() {
	var cfg coldstart.Config
	flag.StringVar(&cfg.Template, "template", "", "the synthesized template (cdk synth's Crawlstack.template.json)")
	flag.StringVar(&cfg.Dist, "dist", "", "the folder of <function>/bootstrap, built for this machine")
	flag.StringVar(&cfg.RIE, "rie", "", "the aws-lambda-rie binary")
	flag.IntVar(&cfg.Runs, "runs", 5, "cold starts per function")
	flag.Parse()
	if cfg.Template == "" || cfg.Dist == "" || cfg.RIE == "" || cfg.Runs < 1 {
		fmt.Fprintln(os.Stderr, "coldstart: -template, -dist and -rie are required, and -runs must be 1 or more (make coldstart sets them)")
		os.Exit(2)
	}
	rs, err := coldstart.Measure(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "coldstart:", err)
		os.Exit(1)
	}
	coldstart.Report(os.Stdout, rs)
}
