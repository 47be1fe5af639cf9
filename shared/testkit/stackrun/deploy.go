package stackrun

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/crawlstack/crawlstack/shared/testkit/cfntemplate"
)

// SQSAPI is what Deploy calls on SQS.
type SQSAPI interface {
	CreateQueue(context.Context, *sqs.CreateQueueInput, ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueAttributes(context.Context, *sqs.GetQueueAttributesInput, ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// DynamoDBAPI is what Deploy calls on DynamoDB.
type DynamoDBAPI interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	UpdateTimeToLive(context.Context, *dynamodb.UpdateTimeToLiveInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// S3API is what Deploy calls on S3.
type S3API interface {
	CreateBucket(context.Context, *s3.CreateBucketInput, ...func(*s3.Options)) (*s3.CreateBucketOutput, error)
	PutBucketNotificationConfiguration(context.Context, *s3.PutBucketNotificationConfigurationInput, ...func(*s3.Options)) (*s3.PutBucketNotificationConfigurationOutput, error)
}

// Clients are the emulators' clients Deploy uses.
type Clients struct {
	SQS      SQSAPI
	DynamoDB DynamoDBAPI
	S3       S3API
}

// Deploy creates t's queues (with their redrive policies and timeouts), table (its keys and TTL)
// and bucket on the emulators, named after their logical ids with prefix, and then configures the
// bucket notifications of t's Custom::S3BucketNotifications resources, as CDK's notification
// handler does at deploy time. It returns what the template's references resolve to. The
// functions are not created: the caller runs them (Read gives their configuration); nor are the
// log groups, alarms and rules, which the emulators do not serve.
func Deploy(ctx context.Context, c Clients, t *cfntemplate.Template, prefix, region string) (cfntemplate.Physical, error) {
	p := names(t, prefix, region, "")
	// Queues first, the dead-letter queues before the queues whose redrive policy names them.
	queues := t.OfType("AWS::SQS::Queue")
	for _, pass := range []bool{false, true} {
		for _, id := range queues {
			props := t.Resources[id].Properties
			if _, redrive := props["RedrivePolicy"]; redrive != pass {
				continue
			}
			if err := createQueue(ctx, c.SQS, &p, id, props); err != nil {
				return p, err
			}
		}
	}
	if p.Account == "" {
		return p, fmt.Errorf("the template has no queue to learn the emulator's account from")
	}
	p = withARNs(t, p) // now that the account is known
	for _, id := range t.OfType("AWS::DynamoDB::Table") {
		if err := createTable(ctx, c.DynamoDB, p.Refs[id], t.Resources[id].Properties); err != nil {
			return p, fmt.Errorf("table %s: %w", id, err)
		}
	}
	for _, id := range t.OfType("AWS::S3::Bucket") {
		if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(p.Refs[id])}); err != nil {
			return p, fmt.Errorf("bucket %s: %w", id, err)
		}
	}
	for _, id := range t.OfType("Custom::S3BucketNotifications") {
		if err := putNotifications(ctx, c.S3, p, t.Resources[id].Properties); err != nil {
			return p, fmt.Errorf("%s: %w", id, err)
		}
	}
	return p, nil
}

// Offline names t's resources with prefix as Deploy would, without creating any: queue URLs point
// at an address that is never called. It is for running a function to its init only.
func Offline(t *cfntemplate.Template, prefix, region, account string) cfntemplate.Physical {
	p := names(t, prefix, region, account)
	for _, id := range t.OfType("AWS::SQS::Queue") {
		name := p.Refs[id]
		p.Refs[id] = "http://127.0.0.1:9/" + account + "/" + name
		p.Attrs[id] = map[string]string{"QueueName": name, "QueueUrl": p.Refs[id]}
	}
	return withARNs(t, p)
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

// names gives every resource a physical name: prefix-logicalid, lower-cased, at most 63 bytes (a
// bucket's limit, the shortest).
func names(t *cfntemplate.Template, prefix, region, account string) cfntemplate.Physical {
	p := cfntemplate.Physical{Region: region, Account: account, Refs: map[string]string{}, Attrs: map[string]map[string]string{}}
	for id := range t.Resources {
		n := unsafeName.ReplaceAllString(strings.ToLower(prefix+"-"+id), "-")
		if len(n) > 63 {
			n = n[:63]
		}
		p.Refs[id] = strings.Trim(n, "-")
		p.Attrs[id] = map[string]string{}
	}
	return p
}

// withARNs sets the Arn attribute (and the Refs that return one) of every resource type the
// crawler's template references.
func withARNs(t *cfntemplate.Template, p cfntemplate.Physical) cfntemplate.Physical {
	r, a := p.Region, p.Account
	for id, res := range t.Resources {
		name := p.Refs[id]
		if q, ok := p.Attrs[id]["QueueName"]; ok {
			name = q
		}
		var arn string
		switch res.Type {
		case "AWS::SQS::Queue":
			arn = "arn:aws:sqs:" + r + ":" + a + ":" + name
		case "AWS::DynamoDB::Table":
			arn = "arn:aws:dynamodb:" + r + ":" + a + ":table/" + name
		case "AWS::S3::Bucket":
			arn = "arn:aws:s3:::" + name
		case "AWS::Lambda::Function":
			arn = "arn:aws:lambda:" + r + ":" + a + ":function:" + name
		case "AWS::IAM::Role":
			arn = "arn:aws:iam::" + a + ":role/" + name
		case "AWS::Events::Rule":
			arn = "arn:aws:events:" + r + ":" + a + ":rule/" + name
		case "AWS::Logs::LogGroup":
			arn = "arn:aws:logs:" + r + ":" + a + ":log-group:" + name + ":*"
		case "AWS::SNS::Topic":
			arn = "arn:aws:sns:" + r + ":" + a + ":" + name
			p.Refs[id] = arn // a topic's Ref is its ARN
		default:
			continue
		}
		p.Attrs[id]["Arn"] = arn
	}
	return p
}

func createQueue(ctx context.Context, c SQSAPI, p *cfntemplate.Physical, id string, props map[string]any) error {
	attrs := map[string]string{}
	for _, k := range []string{"VisibilityTimeout", "MessageRetentionPeriod", "MaximumMessageSize", "DelaySeconds", "ReceiveMessageWaitTimeSeconds"} {
		if v, ok := props[k]; ok {
			attrs[k] = strconv.Itoa(intProp(v, 0))
		}
	}
	if rp, ok := props["RedrivePolicy"]; ok {
		resolved, err := p.Resolve(rp)
		if err != nil {
			return fmt.Errorf("queue %s: redrive policy: %w", id, err)
		}
		b, err := json.Marshal(resolved)
		if err != nil {
			return fmt.Errorf("queue %s: redrive policy: %w", id, err)
		}
		attrs["RedrivePolicy"] = string(b)
	}
	name := p.Refs[id]
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return fmt.Errorf("queue %s: %w", id, err)
	}
	ga, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return fmt.Errorf("queue %s: %w", id, err)
	}
	arn := ga.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	parts := strings.Split(arn, ":") // arn:aws:sqs:<region>:<account>:<name>
	if len(parts) != 6 {
		return fmt.Errorf("queue %s: unexpected ARN %q", id, arn)
	}
	if p.Account == "" {
		p.Account = parts[4]
	}
	p.Refs[id] = aws.ToString(out.QueueUrl)
	p.Attrs[id] = map[string]string{"QueueName": name, "QueueUrl": aws.ToString(out.QueueUrl),
		"Arn": "arn:aws:sqs:" + p.Region + ":" + parts[4] + ":" + name}
	return nil
}

func createTable(ctx context.Context, c DynamoDBAPI, name string, props map[string]any) error {
	var spec struct {
		KeySchema               []struct{ AttributeName, KeyType string }
		AttributeDefinitions    []struct{ AttributeName, AttributeType string }
		TimeToLiveSpecification *struct {
			AttributeName string
			Enabled       bool
		}
	}
	b, err := json.Marshal(props)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("read the table's properties: %w", err)
	}
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), BillingMode: dbtypes.BillingModePayPerRequest}
	for _, k := range spec.KeySchema {
		in.KeySchema = append(in.KeySchema, dbtypes.KeySchemaElement{AttributeName: aws.String(k.AttributeName), KeyType: dbtypes.KeyType(k.KeyType)})
	}
	for _, a := range spec.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, dbtypes.AttributeDefinition{
			AttributeName: aws.String(a.AttributeName), AttributeType: dbtypes.ScalarAttributeType(a.AttributeType)})
	}
	if _, err := c.CreateTable(ctx, in); err != nil {
		return err
	}
	if ttl := spec.TimeToLiveSpecification; ttl != nil && ttl.Enabled {
		if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
			TimeToLiveSpecification: &dbtypes.TimeToLiveSpecification{AttributeName: aws.String(ttl.AttributeName), Enabled: aws.Bool(true)}}); err != nil {
			return fmt.Errorf("time to live: %w", err)
		}
	}
	return nil
}

// putNotifications sends the resource's NotificationConfiguration to its bucket, as CDK's
// BucketNotificationsHandler does (PutBucketNotificationConfiguration with the configuration as
// the template writes it). Queue configurations are the only kind the crawler uses.
func putNotifications(ctx context.Context, c S3API, p cfntemplate.Physical, props map[string]any) error {
	resolved, err := p.Resolve(props)
	if err != nil {
		return err
	}
	b, err := json.Marshal(resolved)
	if err != nil {
		return err
	}
	var spec struct {
		BucketName                string
		NotificationConfiguration struct {
			QueueConfigurations []struct {
				QueueArn string
				Events   []string
				Filter   *struct {
					Key struct {
						FilterRules []struct{ Name, Value string }
					}
				}
			}
			TopicConfigurations, LambdaFunctionConfigurations []any
		}
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("read the notification configuration: %w", err)
	}
	nc := spec.NotificationConfiguration
	if len(nc.TopicConfigurations)+len(nc.LambdaFunctionConfigurations) > 0 {
		return fmt.Errorf("only queue notifications are emulated")
	}
	cfg := &s3types.NotificationConfiguration{}
	for _, q := range nc.QueueConfigurations {
		qc := s3types.QueueConfiguration{QueueArn: aws.String(q.QueueArn)}
		for _, e := range q.Events {
			qc.Events = append(qc.Events, s3types.Event(e))
		}
		if q.Filter != nil {
			f := &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{}}
			for _, r := range q.Filter.Key.FilterRules {
				f.Key.FilterRules = append(f.Key.FilterRules, s3types.FilterRule{Name: s3types.FilterRuleName(r.Name), Value: aws.String(r.Value)})
			}
			qc.Filter = f
		}
		cfg.QueueConfigurations = append(cfg.QueueConfigurations, qc)
	}
	_, err = c.PutBucketNotificationConfiguration(ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket: aws.String(spec.BucketName), NotificationConfiguration: cfg})
	if err != nil {
		return fmt.Errorf("put the notification configuration of %s: %w", spec.BucketName, err)
	}
	return nil
}
