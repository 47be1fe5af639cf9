// Package callrecord records the IAM action and the resource of every AWS call a process makes, as
// JSON lines, so that a test can hold the calls against the IAM policies that a deployment grants
// (shared/testkit/iampolicy). It is SDK middleware: Register installs it on a configuration, and every
// client built from that configuration afterwards records its operations, once per operation
// (not per retry), before the request is sent.
//
// The Lambda mains install it only when CRAWL_CALL_LOG names a file (shared/app/awsports): the stack's
// template never sets that variable, so it is for tests alone.
package callrecord

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/smithy-go/middleware"
)

// The environment variables of a Lambda main that turn recording on (tests only).
const (
	// EnvLog names the file the calls are appended to.
	EnvLog = "CRAWL_CALL_LOG"
	// EnvAccount is the account id that DynamoDB table ARNs are written with (an SQS queue's
	// account comes from its URL, and S3 ARNs have none).
	EnvAccount = "CRAWL_CALL_LOG_ACCOUNT"
)

// Call is one AWS call as IAM authorises it: one action on one resource, with the request's
// condition keys that the call sets (s3:prefix for a listing).
type Call struct {
	// Who names the caller (a function), when the recorder was given one.
	Who       string            `json:"who,omitempty"`
	Operation string            `json:"operation"`
	Action    string            `json:"action"`
	Resource  string            `json:"resource"`
	Context   map[string]string `json:"context,omitempty"`
	// LeadingKeys are the partition key values of the items a DynamoDB call reads or writes
	// (the multivalued condition key dynamodb:LeadingKeys), when the input names them.
	LeadingKeys []string `json:"leadingKeys,omitempty"`
}

// PartitionKey is the name of the tables' partition key attribute, whose values a DynamoDB
// call's LeadingKeys are.
const PartitionKey = "pk"

// Recorder writes the calls of the clients it is registered on, one JSON line each. It is safe for
// concurrent use.
type Recorder struct {
	// Who is written into every call (the function's name).
	Who string
	// Account is the account id of DynamoDB table ARNs.
	Account string

	mu sync.Mutex
	w  io.Writer
}

// New returns a recorder that writes to w.
func New(w io.Writer, who, account string) *Recorder {
	return &Recorder{Who: who, Account: account, w: w}
}

const middlewareID = "crawlstack.callrecord"

// Register installs the recorder on every client built from cfg afterwards.
func (r *Recorder) Register(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, r.apiOption)
}

func (r *Recorder) apiOption(stack *middleware.Stack) error {
	if _, ok := stack.Initialize.Get(middlewareID); ok {
		return nil
	}
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc(middlewareID, r.handle), middleware.Before); err != nil {
		return fmt.Errorf("callrecord: add middleware: %w", err)
	}
	return nil
}

func (r *Recorder) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error,
) {
	calls := Describe(awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx),
		awsmiddleware.GetRegion(ctx), r.Account, in.Parameters)
	if err := r.write(calls); err != nil {
		return middleware.InitializeOutput{}, middleware.Metadata{}, err
	}
	return next.HandleInitialize(ctx, in)
}

// write appends the calls; a call the log cannot take fails the operation, so that no call goes
// unchecked.
func (r *Recorder) write(calls []Call) error {
	var b []byte
	for _, c := range calls {
		c.Who = r.Who
		line, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("callrecord: encode %s: %w", c.Action, err)
		}
		b = append(append(b, line...), '\n')
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.w.Write(b); err != nil {
		return fmt.Errorf("callrecord: write: %w", err)
	}
	return nil
}

// Read returns the calls of a log that a Recorder wrote.
func Read(rd io.Reader) ([]Call, error) {
	var out []Call
	sc := bufio.NewScanner(rd)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("callrecord: line %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("callrecord: read: %w", err)
	}
	return out, nil
}

// actions maps the operations whose IAM action is not "<service>:<operation>" (the Service
// Authorization Reference lists the action each API operation needs).
var actions = map[string]string{
	"s3:HeadObject":                         "s3:GetObject",
	"s3:ListObjectsV2":                      "s3:ListBucket",
	"s3:ListObjects":                        "s3:ListBucket",
	"s3:DeleteObjects":                      "s3:DeleteObject",
	"s3:CreateMultipartUpload":              "s3:PutObject",
	"s3:UploadPart":                         "s3:PutObject",
	"s3:CompleteMultipartUpload":            "s3:PutObject",
	"s3:PutBucketNotificationConfiguration": "s3:PutBucketNotification",
	"s3:HeadBucket":                         "s3:ListBucket",
	"sqs:SendMessageBatch":                  "sqs:SendMessage",
	"sqs:DeleteMessageBatch":                "sqs:DeleteMessage",
	"sqs:ChangeMessageVisibilityBatch":      "sqs:ChangeMessageVisibility",
}

// prefixes are the IAM service prefixes of the SDK's service ids.
var prefixes = map[string]string{"S3": "s3", "SQS": "sqs", "DynamoDB": "dynamodb", "EventBridge": "events"}

// Describe returns the calls IAM authorises for one operation of the named service (an SDK
// service id) with the typed input in: usually one, several for a DynamoDB batch or transaction
// that spans tables or actions. Resources that cannot be told from the input are "*", so that
// only a statement granting every resource allows them.
func Describe(service, op, region, account string, in any) []Call {
	prefix := prefixes[service]
	if prefix == "" {
		prefix = strings.ToLower(service)
	}
	action := prefix + ":" + op
	if a, ok := actions[action]; ok {
		action = a
	}
	call := Call{Operation: op, Action: action, Resource: "*"}
	switch prefix {
	case "s3":
		bucket, key := field(in, "Bucket"), field(in, "Key")
		switch {
		case bucket != "" && key != "":
			call.Resource = "arn:aws:s3:::" + bucket + "/" + key
		case bucket != "":
			call.Resource = "arn:aws:s3:::" + bucket
		}
		if action == "s3:ListBucket" {
			call.Context = map[string]string{"s3:prefix": field(in, "Prefix")}
		}
	case "sqs":
		if u := field(in, "QueueUrl"); u != "" {
			call.Resource = QueueARN(u, region)
		} else if n := field(in, "QueueName"); n != "" {
			call.Resource = "arn:aws:sqs:" + region + ":" + account + ":" + n
		}
	case "dynamodb":
		return dynamoCalls(call, region, account, in)
	case "events":
		return eventCalls(call, region, account, in)
	}
	return []Call{call}
}

// eventCalls are the calls of an EventBridge PutEvents: one per event bus its entries name (an
// entry with no bus goes to the default bus).
func eventCalls(call Call, region, account string, in any) []Call {
	v, ok := in.(*eventbridge.PutEventsInput)
	if !ok {
		return []Call{call}
	}
	var out []Call
	seen := map[string]bool{}
	for _, e := range v.Entries {
		bus := aws.ToString(e.EventBusName)
		if bus == "" {
			bus = "default"
		}
		if !strings.HasPrefix(bus, "arn:") {
			bus = "arn:aws:events:" + region + ":" + account + ":event-bus/" + bus
		}
		if !seen[bus] {
			seen[bus] = true
			c := call
			c.Resource = bus
			out = append(out, c)
		}
	}
	return out
}

// dynamoCalls are the calls of a DynamoDB operation: one per table, and per action of a
// transaction's items.
func dynamoCalls(call Call, region, account string, in any) []Call {
	table := func(name string) string { return "arn:aws:dynamodb:" + region + ":" + account + ":table/" + name }
	var out []Call
	add := func(action, name string, keys ...map[string]types.AttributeValue) {
		c := call
		c.Action, c.Resource = action, table(name)
		c.LeadingKeys = leadingKeys(keys...)
		out = append(out, c)
	}
	switch v := in.(type) {
	case *dynamodb.BatchGetItemInput:
		for name, ka := range v.RequestItems {
			add("dynamodb:BatchGetItem", name, ka.Keys...)
		}
	case *dynamodb.BatchWriteItemInput:
		for name, reqs := range v.RequestItems {
			var keys []map[string]types.AttributeValue
			for _, r := range reqs {
				switch {
				case r.PutRequest != nil:
					keys = append(keys, r.PutRequest.Item)
				case r.DeleteRequest != nil:
					keys = append(keys, r.DeleteRequest.Key)
				}
			}
			add("dynamodb:BatchWriteItem", name, keys...)
		}
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range v.TransactItems {
			switch {
			case it.Put != nil:
				add("dynamodb:PutItem", aws.ToString(it.Put.TableName), it.Put.Item)
			case it.Update != nil:
				add("dynamodb:UpdateItem", aws.ToString(it.Update.TableName), it.Update.Key)
			case it.Delete != nil:
				add("dynamodb:DeleteItem", aws.ToString(it.Delete.TableName), it.Delete.Key)
			case it.ConditionCheck != nil:
				add("dynamodb:ConditionCheckItem", aws.ToString(it.ConditionCheck.TableName), it.ConditionCheck.Key)
			}
		}
	case *dynamodb.TransactGetItemsInput:
		for _, it := range v.TransactItems {
			if it.Get != nil {
				add("dynamodb:GetItem", aws.ToString(it.Get.TableName), it.Get.Key)
			}
		}
	case *dynamodb.GetItemInput:
		add(call.Action, aws.ToString(v.TableName), v.Key)
	case *dynamodb.PutItemInput:
		add(call.Action, aws.ToString(v.TableName), v.Item)
	case *dynamodb.UpdateItemInput:
		add(call.Action, aws.ToString(v.TableName), v.Key)
	case *dynamodb.DeleteItemInput:
		add(call.Action, aws.ToString(v.TableName), v.Key)
	case *dynamodb.QueryInput:
		add(call.Action, aws.ToString(v.TableName), queryKey(v))
	default:
		if name := field(in, "TableName"); name != "" {
			add(call.Action, name)
		} else {
			out = append(out, call)
		}
	}
	return out
}

// QueueARN is the ARN of the queue at u (https://sqs.<region>.amazonaws.com/<account>/<name>, or an
// emulator's http://host:port/<account>/<name>).
func QueueARN(u, region string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "*"
	}
	parts := strings.Split(strings.Trim(p.Path, "/"), "/")
	if len(parts) != 2 {
		return "*"
	}
	return "arn:aws:sqs:" + region + ":" + parts[0] + ":" + parts[1]
}

// field returns the string (or *string) field name of the struct that in points to, or "".
func field(in any, name string) string {
	v := reflect.ValueOf(in)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName(name)
	switch {
	case !f.IsValid():
		return ""
	case f.Kind() == reflect.String:
		return f.String()
	case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.String:
		return f.Elem().String()
	}
	return ""
}

// leadingKeys are the partition key values (PartitionKey, a string) of the items, each once.
func leadingKeys(items ...map[string]types.AttributeValue) []string {
	var out []string
	for _, it := range items {
		if v, ok := it[PartitionKey].(*types.AttributeValueMemberS); ok && !slices.Contains(out, v.Value) {
			out = append(out, v.Value)
		}
	}
	return out
}

// queryKey is the key a Query names in its key condition, PartitionKey = :value (by name or by
// an expression attribute name), as an item: nil when the condition names it otherwise.
func queryKey(in *dynamodb.QueryInput) map[string]types.AttributeValue {
	cond := aws.ToString(in.KeyConditionExpression)
	for name, attr := range in.ExpressionAttributeNames {
		if attr == PartitionKey {
			cond = strings.ReplaceAll(cond, name, PartitionKey)
		}
	}
	for _, part := range strings.Split(cond, " AND ") {
		l, r, ok := strings.Cut(part, "=")
		if !ok || strings.Trim(strings.TrimSpace(l), "()") != PartitionKey {
			continue
		}
		if v, ok := in.ExpressionAttributeValues[strings.Trim(strings.TrimSpace(r), "()")]; ok {
			return map[string]types.AttributeValue{PartitionKey: v}
		}
	}
	return nil
}
