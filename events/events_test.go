package samples

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
)

// roundTrip decodes sample into a value of type T, encodes it again, and checks that every field
// of the sample survived with its value (aws-lambda-go may add fields it always writes).
func roundTrip[T any](t *testing.T, sample []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(sample, &v); err != nil {
		t.Fatalf("decode into %T: %v", v, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	var want, got any
	if err := json.Unmarshal(sample, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if path, ok := contains(got, want, "$"); !ok {
		t.Errorf("round trip through %T lost or changed %s\nsample: %s\nagain:  %s", v, path, sample, out)
	}
	return v
}

// contains reports whether got holds every member of want with an equal value, and where not.
func contains(got, want any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return path + "." + k, false
			}
			if p, ok := contains(gv, wv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := contains(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(got, want)
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := Read(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sqsEvent round-trips an SQS sample and checks what every SQS record carries.
func sqsEvent(t *testing.T, name string) events.SQSEvent {
	t.Helper()
	ev := roundTrip[events.SQSEvent](t, read(t, name))
	if len(ev.Records) == 0 {
		t.Fatalf("%s has no records", name)
	}
	ids := map[string]bool{}
	for i, r := range ev.Records {
		sum := md5.Sum([]byte(r.Body))
		switch {
		case r.EventSource != "aws:sqs" || r.EventSourceARN == "" || r.AWSRegion == "":
			t.Errorf("record %d: eventSource %q, ARN %q, region %q", i, r.EventSource, r.EventSourceARN, r.AWSRegion)
		case r.MessageId == "" || ids[r.MessageId] || r.ReceiptHandle == "":
			t.Errorf("record %d: message id %q missing or repeated, or no receipt handle", i, r.MessageId)
		case r.Md5OfBody != hex.EncodeToString(sum[:]):
			t.Errorf("record %d: md5OfBody %s is not the body's MD5", i, r.Md5OfBody)
		case r.Attributes["ApproximateReceiveCount"] != "1" || r.Attributes["SentTimestamp"] == "":
			t.Errorf("record %d: attributes %v, want a first receive with a SentTimestamp", i, r.Attributes)
		}
		ids[r.MessageId] = true
	}
	return ev
}

func TestS3PutSeed(t *testing.T) {
	ev := sqsEvent(t, S3PutSeed)
	if len(ev.Records) != 1 {
		t.Fatalf("%d records, want 1", len(ev.Records))
	}
	body := []byte(ev.Records[0].Body)
	s3 := roundTripS3(t, body)
	if len(s3.Records) != 1 {
		t.Fatalf("%d S3 records, want 1", len(s3.Records))
	}
	r := s3.Records[0]
	for _, c := range []struct{ name, got, want string }{
		{"eventName", r.EventName, "ObjectCreated:Put"},
		{"eventSource", r.EventSource, "aws:s3"},
		{"key as S3 sends it", r.S3.Object.Key, "seeds/my+seeds.txt"},
		{"decoded key", r.S3.Object.URLDecodedKey, "seeds/my seeds.txt"},
		{"bucket", r.S3.Bucket.Name, "crawlstack-crawl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %q, want %q", c.got, c.want)
			}
		})
	}
	if r.S3.Object.Sequencer == "" || r.EventTime.IsZero() {
		t.Errorf("sequencer %q, eventTime %v: want both set", r.S3.Object.Sequencer, r.EventTime)
	}
}

// roundTripS3 round-trips an S3 notification; aws-lambda-go adds urlDecodedKey on the way.
func roundTripS3(t *testing.T, body []byte) events.S3Event {
	t.Helper()
	return roundTrip[events.S3Event](t, body)
}

func TestS3TestEvent(t *testing.T) {
	ev := sqsEvent(t, S3TestEvent)
	var m struct {
		Service, Event, Bucket string
	}
	if err := json.Unmarshal([]byte(ev.Records[0].Body), &m); err != nil {
		t.Fatal(err)
	}
	if m.Service != "Amazon S3" || m.Event != "s3:TestEvent" || m.Bucket == "" {
		t.Errorf("body = %+v, want S3's s3:TestEvent", m)
	}
}

func TestMessageBatches(t *testing.T) {
	cases := []struct {
		file   string
		kind   message.Kind
		poison []int // indexes of records that must not decode
	}{
		{SQSLinks, message.KindLinks, nil},
		{SQSLinksWithPoison, message.KindLinks, []int{1}},
		{SQSFetch, message.KindFetch, nil},
		{SQSParse, message.KindParse, nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			ev := sqsEvent(t, c.file)
			var bad []int
			for i, r := range ev.Records {
				m, err := message.Decode(r.Body, c.kind)
				if err != nil {
					bad = append(bad, i)
					continue
				}
				if got := reflect.ValueOf(m).Elem().FieldByName("Crawl").String(); got != seedCrawl(t) {
					t.Errorf("record %d is of crawl %q, want %q (the crawl of %s)", i, got, seedCrawl(t), S3PutSeed)
				}
			}
			if !reflect.DeepEqual(bad, c.poison) {
				t.Errorf("records that do not decode as %s: %v, want %v", c.kind, bad, c.poison)
			}
		})
	}
}

// seedCrawl is the crawl that the S3 put sample starts: the message samples belong to it.
func seedCrawl(t *testing.T) string {
	t.Helper()
	ev := sqsEvent(t, S3PutSeed)
	var s3 events.S3Event
	if err := json.Unmarshal([]byte(ev.Records[0].Body), &s3); err != nil {
		t.Fatal(err)
	}
	o := s3.Records[0].S3
	return scheduler.CrawlID(o.Bucket.Name, o.Object.URLDecodedKey, o.Object.Sequencer)
}

func TestEventBridgeTick(t *testing.T) {
	ev := roundTrip[events.EventBridgeEvent](t, read(t, EventBridgeTick))
	if ev.DetailType != "Scheduled Event" || ev.Source != "aws.events" || ev.Time.IsZero() || len(ev.Resources) != 1 {
		t.Errorf("event = %+v, want an EventBridge scheduled event from one rule", ev)
	}
}

func TestEverySampleIsTested(t *testing.T) {
	files, err := FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{S3PutSeed: true, S3TestEvent: true, SQSLinks: true, SQSLinksWithPoison: true,
		SQSFetch: true, SQSParse: true, EventBridgeTick: true}
	for _, f := range files {
		if !known[f.Name()] {
			t.Errorf("%s has no round-trip test", f.Name())
		}
		delete(known, f.Name())
	}
	for name := range known {
		t.Errorf("%s is missing", name)
	}
}

func TestRewrite(t *testing.T) {
	ev := events.SQSEvent{}
	if err := json.Unmarshal(Rewrite(read(t, SQSFetch), "http://127.0.0.1:8080/"), &ev); err != nil {
		t.Fatal(err)
	}
	m, err := message.DecodeFetch(ev.Records[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if m.URL != "http://127.0.0.1:8080/" || m.Root != "http://127.0.0.1:8080/" {
		t.Errorf("rewritten fetch message = %+v, want its URLs on 127.0.0.1:8080", m)
	}
}
