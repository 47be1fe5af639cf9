package faultproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
)

// Service is one of the three emulated services.
type Service string

// The services.
const (
	DynamoDB Service = "dynamodb"
	SQS      Service = "sqs"
	S3       Service = "s3"
)

// class says which faults an operation can take.
type class int

const (
	setup class = iota // never faulted
	read               // Throttle, Delay
	write              // ApplyDrop, Apply500, Throttle, Delay
)

// call is what the proxy knows of one request: its service, operation and target.
type call struct {
	service Service
	op      string
	class   class
	// target is the table and key, bucket and object, or queue it is about, for the log.
	target string
	// queue is the queue URL of an SQS request.
	queue string
	body  []byte
}

func (c call) can(k Kind) bool {
	switch k {
	case ApplyDrop, Apply500:
		return c.class == write
	case Throttle, Delay:
		return c.class != setup
	case DupInReceive, DupLater:
		return c.service == SQS && c.op == "ReceiveMessage"
	}
	return false
}

var dynamoClasses = map[string]class{
	"PutItem": write, "UpdateItem": write, "DeleteItem": write, "BatchWriteItem": write, "TransactWriteItems": write,
	"GetItem": read, "Query": read, "Scan": read, "BatchGetItem": read, "TransactGetItems": read,
}

var sqsClasses = map[string]class{
	"SendMessage": write, "SendMessageBatch": write, "DeleteMessage": write, "DeleteMessageBatch": write,
	"ChangeMessageVisibility": write, "ChangeMessageVisibilityBatch": write,
	"ReceiveMessage": read, "GetQueueAttributes": read,
}

// classify reads the operation and target of a request to service s with body body.
func classify(s Service, r *http.Request, body []byte) call {
	c := call{service: s, body: body}
	switch s {
	case DynamoDB:
		_, c.op, _ = strings.Cut(r.Header.Get("X-Amz-Target"), ".")
		c.class = dynamoClasses[c.op]
		c.target = dynamoTarget(body)
	case SQS:
		_, c.op, _ = strings.Cut(r.Header.Get("X-Amz-Target"), ".")
		c.class = sqsClasses[c.op]
		var in struct{ QueueUrl string }
		_ = json.Unmarshal(body, &in)
		c.queue = in.QueueUrl
		c.target = path.Base(in.QueueUrl)
	case S3:
		c.op, c.class, c.target = s3Op(r)
	}
	return c
}

// dynamoTarget is "table key" for a DynamoDB request: the table, and the key of an item request
// (its Key, or the pk and sk of a PutItem's Item), as "pk=…,sk=…".
func dynamoTarget(body []byte) string {
	var in struct {
		TableName    string
		Key          map[string]map[string]any
		Item         map[string]map[string]any
		RequestItems map[string]json.RawMessage
	}
	_ = json.Unmarshal(body, &in)
	t := in.TableName
	if t == "" {
		for name := range in.RequestItems {
			t = name
		}
	}
	switch {
	case in.Key != nil:
		return t + " " + attrs(in.Key)
	case in.Item != nil && in.Item["pk"] != nil:
		return t + " " + attrs(map[string]map[string]any{"pk": in.Item["pk"], "sk": in.Item["sk"]})
	}
	return t
}

// attrs renders a key's attributes as name=value, in name order.
func attrs(m map[string]map[string]any) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		for _, v := range m[n] {
			fmt.Fprintf(&b, "%s=%v", n, v)
		}
	}
	return b.String()
}

// s3Op names a path-style S3 request (/bucket/key?query), its class and its target.
func s3Op(r *http.Request) (string, class, string) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if k, err := url.PathUnescape(key); err == nil {
		key = k
	}
	target := bucket
	if key != "" {
		target = bucket + "/" + key
	}
	q := r.URL.Query()
	switch {
	case key == "" && r.Method == http.MethodPost && q.Has("delete"):
		return "DeleteObjects", write, target
	case key == "" && r.Method == http.MethodGet && !q.Has("location"):
		return "ListObjects", read, target
	case key == "":
		return r.Method + " bucket", setup, target // CreateBucket, DeleteBucket, HeadBucket ...
	case r.Method == http.MethodPut && q.Has("partNumber"):
		return "UploadPart", write, target
	case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "":
		return "CopyObject", write, target
	case r.Method == http.MethodPut:
		return "PutObject", write, target
	case r.Method == http.MethodDelete:
		return "DeleteObject", write, target
	case r.Method == http.MethodGet:
		return "GetObject", read, target
	case r.Method == http.MethodHead:
		return "HeadObject", read, target
	}
	return r.Method + " object", setup, target // multipart start and completion
}
