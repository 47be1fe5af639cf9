// Package stackoutputs reads a deployed crawler stack's CloudFormation outputs (its table, bucket
// and queues, infra/crawlstack/outputs.go) as the variables the CLI's AWS backend reads, so that
// `crawl status --stack NAME` finds the stack with nothing else set.
package stackoutputs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/smithy-go"
)

// Vars are the stack's outputs by the environment variable the CLI reads for each.
var Vars = map[string]string{
	"TableName":        "CRAWL_TABLE",
	"BucketName":       "CRAWL_BUCKET",
	"ScheduleQueueUrl": "SCHEDULE_QUEUE_URL",
	"FetchQueueUrl":    "FETCH_QUEUE_URL",
	"ParseQueueUrl":    "PARSE_QUEUE_URL",
	"ScheduleDLQUrl":   "SCHEDULE_DLQ_URL",
	"FetchDLQUrl":      "FETCH_DLQ_URL",
	"ParseDLQUrl":      "PARSE_DLQ_URL",
}

// Optional are the outputs of a part of the stack that a deployment may leave out, by the
// variable each sets: the render step's queues (render=true), and the slow lane's queue, which a
// stack deployed before it has not.
var Optional = map[string]string{
	"FetchslowQueueUrl": "FETCHSLOW_QUEUE_URL",
	"RenderQueueUrl":    "RENDER_QUEUE_URL",
	"RenderDLQUrl":      "RENDER_DLQ_URL",
}

// ErrNoStack is the error of a stack that is not there (or not visible to the caller).
var ErrNoStack = errors.New("no such stack")

// Describer is what Read needs of the CloudFormation client.
type Describer interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, optFns ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// Read returns the stack's outputs by the variable each sets (Vars). A stack that lacks one of
// them (not a crawler stack, or one still being created) is an error that names what is missing.
func Read(ctx context.Context, cf Describer, stack string) (map[string]string, error) {
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationError" && strings.Contains(api.ErrorMessage(), "does not exist") {
		return nil, fmt.Errorf("stack %s: %w in this account and region (AWS_REGION, AWS_PROFILE); `aws cloudformation list-stacks` lists them", stack, ErrNoStack)
	}
	if err != nil {
		return nil, fmt.Errorf("describe stack %s: %w", stack, err)
	}
	if len(out.Stacks) == 0 {
		return nil, fmt.Errorf("stack %s: %w", stack, ErrNoStack)
	}
	vars := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		if v, ok := Vars[aws.ToString(o.OutputKey)]; ok {
			vars[v] = aws.ToString(o.OutputValue)
		}
		if v, ok := Optional[aws.ToString(o.OutputKey)]; ok {
			vars[v] = aws.ToString(o.OutputValue)
		}
	}
	var missing []string
	for k, v := range Vars {
		if vars[v] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("stack %s (%s) has no output %s: is it a crawler stack, deployed to the end?",
			stack, out.Stacks[0].StackStatus, strings.Join(missing, ", "))
	}
	return vars, nil
}
