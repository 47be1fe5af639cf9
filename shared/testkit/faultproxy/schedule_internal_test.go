package faultproxy

import (
	"math"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestScheduleIsAFunctionOfSeedAndSequence: the same seed gives every request the same fault,
// another seed another schedule, and each kind hits its rate's share of the requests it can take.
func TestScheduleIsAFunctionOfSeedAndSequence(t *testing.T) {
	rates := map[Kind]float64{ApplyDrop: 0.02, Apply500: 0.03, Throttle: 0.05, Delay: 0.01, DupInReceive: 0.04, DupLater: 0.02}
	a, b, other := Schedule{Seed: 7, Rates: rates}, Schedule{Seed: 7, Rates: rates}, Schedule{Seed: 8, Rates: rates}
	all := func(Kind) bool { return true }
	const n = 200000
	counts := map[Kind]int{}
	differ := 0
	for seq := uint64(1); seq <= n; seq++ {
		ka := a.decide(seq, all)
		if kb := b.decide(seq, all); ka != kb {
			t.Fatalf("request %d: %q, then %q with the same seed", seq, ka, kb)
		}
		if other.decide(seq, all) != ka {
			differ++
		}
		counts[ka]++
	}
	if differ == 0 {
		t.Error("seeds 7 and 8 make the same schedule")
	}
	for k, r := range rates {
		if got := float64(counts[k]) / n; math.Abs(got-r) > 0.004 {
			t.Errorf("%s hit %.4f of the requests, want %.4f", k, got, r)
		}
	}
	// A kind the request cannot take is not injected in its place.
	reads := func(k Kind) bool { return k == Throttle || k == Delay }
	for seq := uint64(1); seq <= 1000; seq++ {
		if k := a.decide(seq, reads); k != "" && !reads(k) {
			t.Fatalf("request %d that takes only throttle and delay got %s", seq, k)
		}
	}
}

func TestScheduleValidates(t *testing.T) {
	for _, s := range []Schedule{
		{Rates: map[Kind]float64{"melt": 0.1}},
		{Rates: map[Kind]float64{Throttle: 1.5}},
		{Rates: map[Kind]float64{Throttle: 0.6, Delay: 0.6}},
		{Script: map[uint64]Kind{1: "melt"}},
	} {
		if err := s.validate(); err == nil {
			t.Errorf("%v validates", s)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		svc    Service
		method string
		target string // X-Amz-Target
		path   string
		body   string
		op     string
		class  class
		where  string
	}{
		{DynamoDB, "POST", "DynamoDB_20120810.PutItem", "/", `{"TableName":"t","Item":{"pk":{"S":"c#x#1"},"sk":{"S":"u#1"},"n":{"N":"1"}}}`, "PutItem", write, "t pk=c#x#1,sk=u#1"},
		{DynamoDB, "POST", "DynamoDB_20120810.UpdateItem", "/", `{"TableName":"t","Key":{"pk":{"S":"k#3"},"sk":{"S":"x"}}}`, "UpdateItem", write, "t pk=k#3,sk=x"},
		{DynamoDB, "POST", "DynamoDB_20120810.BatchWriteItem", "/", `{"RequestItems":{"t":[]}}`, "BatchWriteItem", write, "t"},
		{DynamoDB, "POST", "DynamoDB_20120810.Query", "/", `{"TableName":"t"}`, "Query", read, "t"},
		{DynamoDB, "POST", "DynamoDB_20120810.CreateTable", "/", `{"TableName":"t"}`, "CreateTable", setup, "t"},
		{SQS, "POST", "AmazonSQS.SendMessageBatch", "/", `{"QueueUrl":"http://h/000/c-fetch"}`, "SendMessageBatch", write, "c-fetch"},
		{SQS, "POST", "AmazonSQS.ReceiveMessage", "/", `{"QueueUrl":"http://h/000/c-parse"}`, "ReceiveMessage", read, "c-parse"},
		{SQS, "POST", "AmazonSQS.CreateQueue", "/", `{"QueueName":"q"}`, "CreateQueue", setup, ""},
		{S3, "PUT", "", "/b/pages/x.warc.gz", "", "PutObject", write, "b/pages/x.warc.gz"},
		{S3, "DELETE", "", "/b/k", "", "DeleteObject", write, "b/k"},
		{S3, "POST", "", "/b?delete", "", "DeleteObjects", write, "b"},
		{S3, "GET", "", "/b/k", "", "GetObject", read, "b/k"},
		{S3, "GET", "", "/b?list-type=2&prefix=records/", "", "ListObjects", read, "b"},
		{S3, "PUT", "", "/b", "", "PUT bucket", setup, "b"},
	}
	for _, tt := range tests {
		t.Run(string(tt.svc)+"_"+tt.op, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "http://proxy"+tt.path, strings.NewReader(tt.body))
			if tt.target != "" {
				r.Header.Set("X-Amz-Target", tt.target)
			}
			c := classify(tt.svc, r, []byte(tt.body))
			if c.op != tt.op || c.class != tt.class || (tt.where != "" && c.target != tt.where) {
				t.Errorf("classify = %s class %d target %q, want %s class %d target %q", c.op, c.class, c.target, tt.op, tt.class, tt.where)
			}
		})
	}
}
