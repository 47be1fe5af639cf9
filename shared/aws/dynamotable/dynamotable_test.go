package dynamotable

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// fakeAPI is an API whose write and query methods are function fields; the others panic if called.
type fakeAPI struct {
	API
	putItem    func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	updateItem func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	deleteItem func(*dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error)
	query      func(*dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
	batchGet   func(*dynamodb.BatchGetItemInput) (*dynamodb.BatchGetItemOutput, error)
}

func (f *fakeAPI) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return f.batchGet(in)
}

func (f *fakeAPI) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return f.putItem(in)
}

func (f *fakeAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return f.updateItem(in)
}

func (f *fakeAPI) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return f.deleteItem(in)
}

func (f *fakeAPI) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return f.query(in)
}

func TestEveryNameAliased(t *testing.T) {
	reserved := []string{"status", "url", "owner", "depth", "name", "count"}
	cond := table.And(table.Eq("status", "queued"), table.Exists("url"), table.Ne("owner", "w1"),
		table.Lt("depth", int64(5)), table.Not(table.NotExists("name")), table.Or(table.Ge("count", int64(1)), table.ItemNotExists()))
	u := table.Update{Set: map[string]any{"status": "x", "url": "u"}, Add: map[string]int64{"count": 1}, Remove: []string{"owner"}}
	expr, err := buildExpression(cond, &u)
	if err != nil {
		t.Fatalf("buildExpression: %v", err)
	}
	text := aws.ToString(expr.Condition()) + " " + aws.ToString(expr.Update())
	aliased := map[string]bool{}
	for _, n := range expr.Names() {
		aliased[n] = true
	}
	for _, w := range reserved {
		if !aliased[w] {
			t.Errorf("%s has no #placeholder; names = %v", w, expr.Names())
		}
		for _, field := range strings.FieldsFunc(text, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r == '#' || r == '_' || r >= '0' && r <= '9') }) {
			if field == w {
				t.Errorf("bare %q in expression %q", w, text)
			}
		}
	}
}

// TestCallsCarryTheExpression checks that Put, Update, Delete and Query send the expression they
// build, with its names and values, and send none when there is nothing to check or change.
func TestCallsCarryTheExpression(t *testing.T) {
	type request struct {
		cond, update, filter *string
		names                map[string]string
		values               map[string]types.AttributeValue
	}
	claim := table.Or(table.NotExists("leaseUntil"), table.Lt("leaseUntil", int64(100)))
	tests := []struct {
		name                             string
		call                             func(context.Context, *Table) error
		wantCond, wantUpdate, wantFilter string
	}{
		{"Put/itemNotExists", func(ctx context.Context, tb *Table) error {
			return tb.Put(ctx, key, table.Item{"status": "queued"}, table.ItemNotExists())
		}, "attribute_not_exists (#pk)", "", ""},
		{"Put/noCondition", func(ctx context.Context, tb *Table) error {
			return tb.Put(ctx, key, table.Item{"status": "queued"}, table.Cond{})
		}, "", "", ""},
		{"Update/conditionAndUpdate", func(ctx context.Context, tb *Table) error {
			_, err := tb.Update(ctx, key, table.Update{Set: map[string]any{"owner": "w1"}, Add: map[string]int64{"attempts": 1}}, claim)
			return err
		}, "(attribute_not_exists (#leaseUntil)) OR (#leaseUntil < :100)", "ADD #attempts :1\nSET #owner = :\"w1\"\n", ""},
		{"Update/updateOnly", func(ctx context.Context, tb *Table) error {
			_, err := tb.Update(ctx, key, table.Update{Remove: []string{"owner"}}, table.Cond{})
			return err
		}, "", "REMOVE #owner\n", ""},
		{"Update/conditionOnly", func(ctx context.Context, tb *Table) error {
			_, err := tb.Update(ctx, key, table.Update{}, table.ItemExists())
			return err
		}, "attribute_exists (#pk)", "", ""},
		{"Update/nothing", func(ctx context.Context, tb *Table) error {
			_, err := tb.Update(ctx, key, table.Update{}, table.Cond{})
			return err
		}, "", "", ""},
		{"Delete/lt", func(ctx context.Context, tb *Table) error {
			return tb.Delete(ctx, key, table.Lt("leaseUntil", int64(100)))
		}, "#leaseUntil < :100", "", ""},
		{"Delete/noCondition", func(ctx context.Context, tb *Table) error {
			return tb.Delete(ctx, key, table.Cond{})
		}, "", "", ""},
		{"Query/prefix", func(ctx context.Context, tb *Table) error {
			return tb.Query(ctx, "c#x#3", "u#", func(string, table.Item) error { return nil })
		}, "", "", `(#pk = :"c#x#3") AND (begins_with (#sk, :"u#"))`},
		{"Query/all", func(ctx context.Context, tb *Table) error {
			return tb.Query(ctx, "c#x#3", "", func(string, table.Item) error { return nil })
		}, "", "", `#pk = :"c#x#3"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sent []request
			f := &fakeAPI{
				putItem: func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
					sent = append(sent, request{cond: in.ConditionExpression,
						names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues})
					return &dynamodb.PutItemOutput{}, nil
				},
				updateItem: func(in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
					sent = append(sent, request{cond: in.ConditionExpression, update: in.UpdateExpression,
						names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues})
					return &dynamodb.UpdateItemOutput{}, nil
				},
				deleteItem: func(in *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error) {
					sent = append(sent, request{cond: in.ConditionExpression,
						names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues})
					return &dynamodb.DeleteItemOutput{}, nil
				},
				query: func(in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
					if !aws.ToBool(in.ConsistentRead) || in.FilterExpression != nil {
						t.Errorf("a query with ConsistentRead %v and filter %v, want a strong read and no filter",
							aws.ToBool(in.ConsistentRead), aws.ToString(in.FilterExpression))
					}
					sent = append(sent, request{filter: in.KeyConditionExpression,
						names: in.ExpressionAttributeNames, values: in.ExpressionAttributeValues})
					return &dynamodb.QueryOutput{}, nil
				},
			}
			if err := tt.call(context.Background(), New(f, "t")); err != nil {
				t.Fatalf("call: %v", err)
			}
			if len(sent) != 1 {
				t.Fatalf("%d requests sent, want 1", len(sent))
			}
			// resolve also fails on names or values that no expression uses.
			got := resolve(t, sent[0].names, sent[0].values, sent[0].cond, sent[0].update, sent[0].filter)
			for i, want := range []string{tt.wantCond, tt.wantUpdate, tt.wantFilter} {
				if got[i] != want {
					t.Errorf("%s expression = %q, want %q", [...]string{"condition", "update", "key condition"}[i], got[i], want)
				}
			}
		})
	}
}

// key is the key the tests write.
var key = table.Key{Part: "P", Sort: "k"}

func TestConditionFailedCarriesOldItem(t *testing.T) {
	tests := []struct {
		name string
		old  map[string]types.AttributeValue
		want table.Item
	}{
		{"Existing", map[string]types.AttributeValue{
			"pk":    &types.AttributeValueMemberS{Value: "k"},
			"owner": &types.AttributeValueMemberS{Value: "w2"},
			"lease": &types.AttributeValueMemberN{Value: "9007199254740993"},
		}, table.Item{"owner": "w2", "lease": int64(9007199254740993)}},
		{"Missing", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sent *dynamodb.PutItemInput
			f := &fakeAPI{putItem: func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				sent = in
				return nil, &types.ConditionalCheckFailedException{Message: aws.String("no"), Item: tt.old}
			}}
			err := New(f, "t").Put(context.Background(), key, table.Item{"owner": "w1"}, table.ItemNotExists())
			cf, ok := table.IsConditionFailed(err)
			if !ok {
				t.Fatalf("err = %v, want a *table.ConditionFailedError", err)
			}
			if cf.Key != key || !reflect.DeepEqual(cf.Item, tt.want) {
				t.Errorf("ConditionFailedError = %+v, want key k, item %#v", cf, tt.want)
			}
			if sent.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
				t.Errorf("ReturnValuesOnConditionCheckFailure = %q, want ALL_OLD", sent.ReturnValuesOnConditionCheckFailure)
			}
		})
	}
}

func TestNumbersAreInt64(t *testing.T) {
	it, err := fromAttributes(map[string]types.AttributeValue{
		"pk":  &types.AttributeValueMemberS{Value: "k"},
		"max": &types.AttributeValueMemberN{Value: "9223372036854775807"},
		"neg": &types.AttributeValueMemberN{Value: "-1"},
	})
	if err != nil {
		t.Fatalf("fromAttributes: %v", err)
	}
	want := table.Item{"max": int64(math.MaxInt64), "neg": int64(-1)}
	if !reflect.DeepEqual(it, want) {
		t.Errorf("item = %#v, want %#v", it, want)
	}
	if _, err := fromAttributes(map[string]types.AttributeValue{"f": &types.AttributeValueMemberN{Value: "1.5"}}); err == nil {
		t.Error("a fractional number converted without error")
	}
}
