package dynamotable

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// TestGetManyAsksAgainForUnprocessedKeys: each BatchGetItem names at most 100 distinct keys,
// reads strongly consistent, and the keys DynamoDB leaves unprocessed are asked for again.
func TestGetManyAsksAgainForUnprocessedKeys(t *testing.T) {
	var calls, asked int
	f := &fakeAPI{batchGet: func(in *dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error) {
		calls++
		ka := in.RequestItems["t"]
		if n := len(ka.Keys); n > 100 {
			t.Errorf("a BatchGetItem named %d keys, more than 100", n)
		}
		if !aws.ToBool(ka.ConsistentRead) {
			t.Errorf("call %d: ConsistentRead is not set", calls)
		}
		out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
		var left []map[string]types.AttributeValue
		for i, k := range ka.Keys {
			asked++
			pk := k["pk"].(*types.AttributeValueMemberS).Value
			if calls == 1 && i%2 == 1 {
				left = append(left, k) // throttled: unprocessed
				continue
			}
			out.Responses["t"] = append(out.Responses["t"], map[string]types.AttributeValue{
				"pk": k["pk"], "sk": k["sk"], "v": &types.AttributeValueMemberS{Value: "of " + pk},
			})
		}
		if len(left) > 0 {
			out.UnprocessedKeys = map[string]types.KeysAndAttributes{"t": {Keys: left}}
		}
		return out, nil
	}}
	var keys []table.Key
	for i := range 150 {
		keys = append(keys, table.Key{Part: fmt.Sprintf("k%d", i), Sort: "s"})
	}
	keys = append(keys, keys[0], keys[149])
	got, err := New(f, "t").GetMany(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 150 {
		t.Errorf("got %d items, want 150", len(got))
	}
	for _, k := range keys {
		if v := got[k].String("v"); v != "of "+k.Part {
			t.Errorf("item %s: v = %q", k, v)
		}
	}
	if want := 150 + 50; asked != want { // half of the first request's 100 keys asked again
		t.Errorf("%d keys asked for in all, want %d (each once, the unprocessed twice)", asked, want)
	}
}
