// Command parse is the parse Lambda function: it extracts links and metadata from stored pages and writes records.
// See package parser.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/crawlstack/crawlstack/shared/awsports"
)

func main() {
	log := lambdacontext.NewLogger()
	h, err := awsports.NewHandlers(context.Background(), os.Getenv, log)
	if err != nil {
		log.Error("cannot start: bad configuration", "err", err.Error())
		os.Exit(1)
	}
	lambda.Start(h.Parse.Handle)
}
