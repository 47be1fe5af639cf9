package meter

import (
	"context"
	"slices"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The IDs of the meter's middleware in an operation stack.
const (
	initializeID  = "crawlstack.meter.initialize"
	deserializeID = "crawlstack.meter.deserialize"
)

// The service IDs (awsmiddleware.GetServiceID) of the services the meter counts.
const (
	serviceDynamoDB = "DynamoDB"
	serviceSQS      = "SQS"
	serviceS3       = "S3"
)

// inputKey keys the operation's typed input among the stack values, for the deserialize step,
// which sees only the HTTP request.
type inputKey struct{}

// initializeMiddleware runs once per operation, before serialization: it asks DynamoDB for the
// consumed capacity and keeps the typed input for deserializeMiddleware.
type initializeMiddleware struct{}

// ID names the middleware in the stack.
func (initializeMiddleware) ID() string { return initializeID }

// HandleInitialize swaps in a DynamoDB input that returns its consumed capacity and stores the
// input for the deserialize step.
func (initializeMiddleware) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error,
) {
	if awsmiddleware.GetServiceID(ctx) == serviceDynamoDB {
		in.Parameters = withConsumedCapacity(in.Parameters)
	}
	ctx = middleware.WithStackValue(ctx, inputKey{}, in.Parameters)
	return next.HandleInitialize(ctx, in)
}

// deserializeMiddleware runs once per attempt, around the operation's deserializer, so it sees
// each answer's typed output or error.
type deserializeMiddleware struct{ m *Meter }

// ID names the middleware in the stack.
func (deserializeMiddleware) ID() string { return deserializeID }

// HandleDeserialize counts the units of one answered attempt.
func (d deserializeMiddleware) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	out, md, err := next.HandleDeserialize(ctx, in)
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if !ok || resp == nil {
		return out, md, err // no answer: nothing reached the service's meter either
	}
	input := middleware.GetStackValue(ctx, inputKey{})
	op := awsmiddleware.GetOperationName(ctx)
	var u cost.Units
	switch awsmiddleware.GetServiceID(ctx) {
	case serviceDynamoDB:
		u = dynamoUnits(op, input, out.Result, err)
	case serviceSQS:
		u = cost.Units{SQSRequests: sqsRequests(op, input, out.Result)}
		d.m.addCall(op+" "+queueOf(input), u.SQSRequests)
	case serviceS3:
		u = s3Units(op, resp.StatusCode)
	}
	if u != (cost.Units{}) {
		d.m.add(u)
		for _, a := range accountsOf(ctx) {
			if a != d.m {
				a.add(u)
			}
		}
	}
	return out, md, err
}

type accountKey struct{}

// WithAccount returns a context whose metered calls are also counted in a: the units of one
// invocation, say, while others run at the same time on the same clients. Accounts nest: a call
// counts in a and in every account of ctx, so an account around a whole run (a test's, say)
// counts what the invocations inside it count in their own. An account counts a call once,
// however often it is nested.
func WithAccount(ctx context.Context, a *Meter) context.Context {
	outer := accountsOf(ctx)
	if slices.Contains(outer, a) {
		return ctx
	}
	// Clipped, so that two contexts made from the same one never share the appended element.
	return context.WithValue(ctx, accountKey{}, append(slices.Clip(outer), a))
}

// accountsOf is the accounts of ctx, outermost first.
func accountsOf(ctx context.Context) []*Meter {
	as, _ := ctx.Value(accountKey{}).([]*Meter)
	return as
}
