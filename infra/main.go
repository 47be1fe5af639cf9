// Command infra is the CDK app of the crawler: it reads the crawler settings
// from CDK context, validates them and synthesizes the Crawlstack stack.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/crawlstack/crawlstack/infra/crawlstack"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	all, _ := app.Node().GetAllContext(nil).(map[string]any)
	cfg, err := crawlstack.ConfigFromContextMap(all)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlstack: bad configuration:\n%v\n", err)
		os.Exit(1)
	}
	if err := cfg.CheckBootstraps(); err != nil {
		fmt.Fprintf(os.Stderr, "crawlstack: function binaries missing:\n%v\n", err)
		os.Exit(1)
	}
	crawlstack.NewStack(app, "Crawlstack", &crawlstack.Props{
		StackProps: awscdk.StackProps{
			Description: jsii.String("crawlstack: a serverless web crawler"),
		},
		Config: cfg,
	})
	app.Synth(nil)
}
