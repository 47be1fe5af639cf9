package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/johannesboyne/gofakes3"
)

// queueSender is what the notifier calls on SQS.
type queueSender interface {
	GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// notificationConfiguration is the body of PutBucketNotificationConfiguration, in S3's XML. Only
// queue destinations are kept: the crawler's stack uses no other.
type notificationConfiguration struct {
	XMLName xml.Name             `xml:"NotificationConfiguration"`
	Queues  []queueConfiguration `xml:"QueueConfiguration"`
}

type queueConfiguration struct {
	ID     string   `xml:"Id,omitempty"`
	Queue  string   `xml:"Queue"`
	Events []string `xml:"Event"`
	Rules  []struct {
		Name  string `xml:"Name"`
		Value string `xml:"Value"`
	} `xml:"Filter>S3Key>FilterRule"`
}

// matches says whether an event of type event (ObjectCreated:Put, say) for key is one this
// configuration sends: one of its event patterns (s3:ObjectCreated:* covers every
// s3:ObjectCreated: event) and every prefix and suffix rule.
func (q queueConfiguration) matches(event, key string) bool {
	ok := false
	for _, e := range q.Events {
		if e == "s3:"+event || strings.HasSuffix(e, ":*") && strings.HasPrefix("s3:"+event, strings.TrimSuffix(e, "*")) {
			ok = true
		}
	}
	for _, r := range q.Rules {
		switch strings.ToLower(r.Name) {
		case "prefix":
			ok = ok && strings.HasPrefix(key, r.Value)
		case "suffix":
			ok = ok && strings.HasSuffix(key, r.Value)
		}
	}
	return ok
}

// notifier emulates S3 event notifications to SQS, which gofakes3 lacks: it keeps each bucket's
// notification configuration (PUT and GET ?notification) and, once an object is created
// (PutObject, CopyObject, CompleteMultipartUpload) under a configured filter, sends S3's event
// message to the configured queue before it answers the request, so that the message is in the
// queue when the caller sees the object. Like S3, it sends s3:TestEvent to each queue when a
// configuration is put.
type notifier struct {
	backend gofakes3.Backend
	sqs     queueSender
	region  string
	next    http.Handler

	mu      sync.Mutex
	configs map[string]notificationConfiguration
	seq     atomic.Uint64
}

func newNotifier(b gofakes3.Backend, q queueSender, region string, next http.Handler) *notifier {
	return &notifier{backend: b, sqs: q, region: region, next: next, configs: map[string]notificationConfiguration{}}
}

func (n *notifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	switch {
	case key == "" && q.Has("notification") && r.Method == http.MethodPut:
		n.putConfig(w, r, bucket)
	case key == "" && q.Has("notification") && r.Method == http.MethodGet:
		n.getConfig(w, bucket)
	case key != "" && createsObject(r.Method, q):
		n.created(w, r, bucket, key)
	default:
		n.next.ServeHTTP(w, r)
	}
}

// createsObject tells the object requests that create an object: PutObject and CopyObject (a PUT
// with no subresource but the SDK's x-id), and CompleteMultipartUpload (a POST with uploadId).
func createsObject(method string, q url.Values) bool {
	switch method {
	case http.MethodPut:
		for k := range q {
			if k != "x-id" {
				return false
			}
		}
		return true
	case http.MethodPost:
		return q.Has("uploadId")
	}
	return false
}

func (n *notifier) putConfig(w http.ResponseWriter, r *http.Request, bucket string) {
	if ok, err := n.backend.BucketExists(bucket); err != nil || !ok {
		http.Error(w, "NoSuchBucket", http.StatusNotFound)
		return
	}
	var cfg notificationConfiguration
	if err := xml.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&cfg); err != nil {
		http.Error(w, "MalformedXML: "+err.Error(), http.StatusBadRequest)
		return
	}
	for _, qc := range cfg.Queues {
		test := events.S3TestEvent{Service: "Amazon S3", Event: "s3:TestEvent", Bucket: bucket,
			Time: time.Now().UTC(), RequestID: n.requestID(), HostID: "fakes3"}
		if err := n.send(r.Context(), qc.Queue, test); err != nil {
			// S3 refuses a configuration whose destination it cannot reach.
			http.Error(w, "InvalidArgument: Unable to validate the following destination configurations: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	n.mu.Lock()
	n.configs[bucket] = cfg
	n.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (n *notifier) getConfig(w http.ResponseWriter, bucket string) {
	n.mu.Lock()
	cfg := n.configs[bucket]
	n.mu.Unlock()
	w.Header().Set("Content-Type", "application/xml")
	_ = xml.NewEncoder(w).Encode(cfg)
}

// created passes the request on, and when it created an object that a configuration covers, sends
// the notification before the answer goes out.
func (n *notifier) created(w http.ResponseWriter, r *http.Request, bucket, key string) {
	n.mu.Lock()
	cfg, configured := n.configs[bucket]
	n.mu.Unlock()
	if !configured {
		n.next.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	n.next.ServeHTTP(rec, r)
	event := "ObjectCreated:Put"
	switch {
	case r.Method == http.MethodPost:
		event = "ObjectCreated:CompleteMultipartUpload"
	case r.Header.Get("X-Amz-Copy-Source") != "":
		event = "ObjectCreated:Copy"
	}
	if rec.Code == http.StatusOK {
		if err := n.notify(r.Context(), cfg, bucket, key, event); err != nil {
			slog.Error("send the s3 notification", "bucket", bucket, "key", key, "err", err.Error())
			rec = httptest.NewRecorder()
			http.Error(rec, "InternalError: notification: "+err.Error(), http.StatusInternalServerError)
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (n *notifier) notify(ctx context.Context, cfg notificationConfiguration, bucket, key, event string) error {
	obj, err := n.backend.HeadObject(bucket, key)
	if err != nil {
		return fmt.Errorf("head %s/%s: %w", bucket, key, err)
	}
	for _, qc := range cfg.Queues {
		if !qc.matches(event, key) {
			continue
		}
		ev := events.S3Event{Records: []events.S3EventRecord{{
			EventVersion: "2.1", EventSource: "aws:s3", AWSRegion: n.region, EventTime: time.Now().UTC(),
			EventName:         event,
			PrincipalID:       events.S3UserIdentity{PrincipalID: "fakes3"},
			RequestParameters: events.S3RequestParameters{SourceIPAddress: "127.0.0.1"},
			ResponseElements:  map[string]string{"x-amz-request-id": n.requestID(), "x-amz-id-2": "fakes3"},
			S3: events.S3Entity{SchemaVersion: "1.0", ConfigurationID: qc.ID,
				Bucket: events.S3Bucket{Name: bucket, OwnerIdentity: events.S3UserIdentity{PrincipalID: "fakes3"}, Arn: "arn:aws:s3:::" + bucket},
				Object: events.S3Object{Key: escapeKey(key), Size: obj.Size, ETag: hex.EncodeToString(obj.Hash),
					Sequencer: fmt.Sprintf("%016X", n.seq.Add(1))}},
		}}}
		if err := n.send(ctx, qc.Queue, ev); err != nil {
			return err
		}
	}
	return nil
}

// send delivers msg as JSON to the queue whose ARN is arn (arn:aws:sqs:<region>:<account>:<name>).
func (n *notifier) send(ctx context.Context, arn string, msg any) error {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[2] != "sqs" {
		return fmt.Errorf("%q is not a queue ARN", arn)
	}
	u, err := n.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
	if err != nil {
		return fmt.Errorf("queue %s: %w", arn, err)
	}
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(msg); err != nil {
		return err
	}
	if _, err := n.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: u.QueueUrl, MessageBody: aws.String(strings.TrimSpace(b.String()))}); err != nil {
		return fmt.Errorf("send to %s: %w", arn, err)
	}
	return nil
}

func (n *notifier) requestID() string { return fmt.Sprintf("%016X", n.seq.Add(1)) }

// escapeKey URL-encodes an object key as S3 notifications do ('+' for a space, '/' kept).
func escapeKey(key string) string {
	return strings.ReplaceAll(url.QueryEscape(key), "%2F", "/")
}
