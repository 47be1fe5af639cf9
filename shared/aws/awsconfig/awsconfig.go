// Package awsconfig loads the AWS SDK configuration shared by every client of a process. The
// Lambda mains call Load once at init and build their clients from it, so that a container
// reuses its connections across invocations.
//
// Endpoints come from the environment, as the SDK reads them: AWS_ENDPOINT_URL for every service
// (LocalStack), or AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_S3 per
// service (the local emulators); a per-service variable wins. With neither set, the clients talk
// to AWS itself.
package awsconfig

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The environment variables that override the endpoints (read by the SDK itself).
const (
	EnvEndpoint         = "AWS_ENDPOINT_URL"
	EnvEndpointS3       = "AWS_ENDPOINT_URL_S3"
	EnvEndpointSQS      = "AWS_ENDPOINT_URL_SQS"
	EnvEndpointDynamoDB = "AWS_ENDPOINT_URL_DYNAMODB"
)

// EnvHTTPTimeout, when set to a Go duration ("3s"), is the HTTP client's timeout for each round
// trip of every client: an answer that takes longer is given up on, and the SDK's retryer sends
// the request again. Unset, a request waits as long as its context lets it. The chaos tests set
// it, so that an answer their fault proxy holds back is given up on as a client with a timeout
// would.
const EnvHTTPTimeout = "CRAWL_AWS_HTTP_TIMEOUT"

// Load returns the default SDK configuration: region, credentials, retryer and endpoint
// overrides from the environment and the shared config files. optFns are passed on to
// config.LoadDefaultConfig.
func Load(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error) {
	if v := os.Getenv(EnvHTTPTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return aws.Config{}, fmt.Errorf("load aws config: %s=%q: want a positive duration such as 3s", EnvHTTPTimeout, v)
		}
		client := config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(d))
		optFns = append([]func(*config.LoadOptions) error{client}, optFns...)
	}
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load aws config: %w", err)
	}
	return cfg, nil
}

// EndpointOverridden reports whether the environment points S3 somewhere other than AWS
// (AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3 is set).
func EndpointOverridden() bool {
	return os.Getenv(EnvEndpoint) != "" || os.Getenv(EnvEndpointS3) != ""
}

// S3Options is the S3 client option this project always applies. It turns on path-style
// addressing whenever the S3 endpoint is overridden (by the environment or a config file),
// because an emulator at http://localhost:PORT has no virtual-host names (<bucket>.localhost does
// not resolve); on AWS it changes nothing there. It also silences the SDK's log line for every
// response that carries no checksum to validate, such as each ranged GET.
func S3Options(o *s3.Options) {
	if EndpointOverridden() || o.BaseEndpoint != nil {
		o.UsePathStyle = true
	}
	o.DisableLogOutputChecksumValidationSkipped = true
}

// Clients are the SDK clients of one process, built once from one configuration.
type Clients struct {
	SQS      *sqs.Client
	DynamoDB *dynamodb.Client
	S3       *s3.Client
}

// NewClients builds the SQS, DynamoDB and S3 clients from cfg, with S3Options applied to S3.
func NewClients(cfg aws.Config) Clients {
	return Clients{
		SQS:      sqs.NewFromConfig(cfg),
		DynamoDB: dynamodb.NewFromConfig(cfg),
		S3:       s3.NewFromConfig(cfg, S3Options),
	}
}
