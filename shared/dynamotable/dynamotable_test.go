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

	"github.com/crawlstack/crawlstack/shared/table"
)

// fakeAPI is an API whose write methods are function fields; the others panic if called.
type fakeAPI struct {
	API
	putItem func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
}

func (f *fakeAPI) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return f.putItem(in)
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

func TestBadConditions(t *testing.T) {
	tests := []struct {
		name string
		cond table.Cond
	}{
		{"EmptyAnd", table.And()},
		{"UnknownOp", table.Cond{Op: "like"}},
		{"FloatValue", table.Eq("x", 1.5)},
		{"NotOfTwo", table.Cond{Op: table.OpNot, Sub: []table.Cond{table.Exists("a"), table.Exists("b")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := buildExpression(tt.cond, nil); err == nil {
				t.Errorf("buildExpression(%+v) succeeded, want an error", tt.cond)
			}
		})
	}
	if _, err := buildExpression(table.Cond{}, &table.Update{Set: map[string]any{"pk": "x"}}); err == nil {
		t.Error("an update of the key succeeded, want an error")
	}
}

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
			err := New(f, "t").Put(context.Background(), "k", table.Item{"owner": "w1"}, table.ItemNotExists())
			cf, ok := table.IsConditionFailed(err)
			if !ok {
				t.Fatalf("err = %v, want a *table.ConditionFailedError", err)
			}
			if cf.Key != "k" || !reflect.DeepEqual(cf.Item, tt.want) {
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
