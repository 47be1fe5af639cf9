// Package dynamotable is the table port on Amazon DynamoDB: one table with the string partition
// key "pk", the string sort key "sk" and the TTL attribute "expiresAt". Conditions and updates become expressions built with
// the SDK's expression builder, which aliases every attribute name, so reserved words (status,
// url, owner, depth, name, count) are safe as attribute names.
package dynamotable

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// API is the part of the DynamoDB client this package calls; *dynamodb.Client implements it.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var (
	_ table.Table = (*Table)(nil)
	_ table.Admin = (*Table)(nil)
	_ API         = (*dynamodb.Client)(nil)
)

// Table implements the table port on one DynamoDB table. It is safe for concurrent use.
type Table struct {
	api  API
	name string
	// queryPage caps the items of a Query page (nil: DynamoDB's 1 MB); tests set it to page.
	queryPage *int32
}

// isKeyAttr is whether the attribute is one of the key's.
func isKeyAttr(name string) bool { return name == table.KeyAttr || name == table.SortAttr }

// New returns a Table for the table named tableName, calling c (normally a *dynamodb.Client built
// once per container).
func New(c API, tableName string) *Table {
	return &Table{api: c, name: tableName}
}

// Get returns the item with the key (a strongly consistent read), or table.ErrNotFound.
func (t *Table) Get(ctx context.Context, key table.Key) (table.Item, error) {
	if err := key.Check(); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	out, err := t.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(t.name), Key: keyOf(key), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("get %s: %w", key, table.ErrNotFound)
	}
	it, err := fromAttributes(out.Item)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return it, nil
}

// Put replaces the whole item if cond holds.
func (t *Table) Put(ctx context.Context, key table.Key, item table.Item, cond table.Cond) error {
	if err := key.Check(); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	av, err := toAttributes(item)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	maps.Copy(av, keyOf(key))
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(t.name),
		Item:                                av,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if !cond.IsZero() {
		expr, err := buildExpression(cond, nil)
		if err != nil {
			return fmt.Errorf("put %s: %w", key, err)
		}
		in.ConditionExpression = expr.Condition()
		in.ExpressionAttributeNames = expr.Names()
		in.ExpressionAttributeValues = expr.Values()
	}
	if _, err := t.api.PutItem(ctx, in); err != nil {
		return t.writeErr("put", key, err)
	}
	return nil
}

// Update applies u if cond holds and returns the item as it is afterwards. Updating a missing
// item creates it, as DynamoDB does.
func (t *Table) Update(ctx context.Context, key table.Key, u table.Update, cond table.Cond) (table.Item, error) {
	if err := key.Check(); err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	if err := u.Check(); err != nil {
		// DynamoDB would refuse it too, naming only the aliases of its paths.
		return nil, fmt.Errorf("update %s: %w", key, err)
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(t.name),
		Key:                                 keyOf(key),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if !cond.IsZero() || !updateIsEmpty(u) {
		expr, err := buildExpression(cond, &u)
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", key, err)
		}
		in.ConditionExpression = expr.Condition()
		in.UpdateExpression = expr.Update()
		in.ExpressionAttributeNames = expr.Names()
		in.ExpressionAttributeValues = expr.Values()
	}
	out, err := t.api.UpdateItem(ctx, in)
	if err != nil {
		return nil, t.writeErr("update", key, err)
	}
	it, err := fromAttributes(out.Attributes)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", key, err)
	}
	return it, nil
}

// Delete removes the item if cond holds. Deleting a missing item with no condition succeeds.
func (t *Table) Delete(ctx context.Context, key table.Key, cond table.Cond) error {
	if err := key.Check(); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	in := &dynamodb.DeleteItemInput{
		TableName:                           aws.String(t.name),
		Key:                                 keyOf(key),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if !cond.IsZero() {
		expr, err := buildExpression(cond, nil)
		if err != nil {
			return fmt.Errorf("delete %s: %w", key, err)
		}
		in.ConditionExpression = expr.Condition()
		in.ExpressionAttributeNames = expr.Names()
		in.ExpressionAttributeValues = expr.Values()
	}
	if _, err := t.api.DeleteItem(ctx, in); err != nil {
		return t.writeErr("delete", key, err)
	}
	return nil
}

// Query calls fn for every item of the partition part whose sort key starts with prefix, in
// sort-key order, a page (up to 1 MB) at a time with strongly consistent reads. DynamoDB bills a
// Query for the items it reads, all of them returned: the key condition selects them, no filter.
func (t *Table) Query(ctx context.Context, part, prefix string, fn func(sort string, item table.Item) error) error {
	return t.QueryAfter(ctx, part, prefix, "", fn)
}

// QueryAfter is Query from the first item whose sort key comes after after: its first page starts
// at after as a page after the first does at the last key of the one before (ExclusiveStartKey),
// which need not be an item's, as the last item of a page may be deleted before the next is read.
// An after before the prefix's items starts at their first; one beyond them reads nothing, with no
// request (DynamoDB refuses a start key that the key condition does not hold).
func (t *Table) QueryAfter(ctx context.Context, part, prefix, after string, fn func(sort string, item table.Item) error) error {
	if err := (table.Key{Part: part, Sort: "-"}).Check(); err != nil {
		return fmt.Errorf("query: %w", err)
	}
	var start map[string]types.AttributeValue
	switch {
	case after == "" || after < prefix:
	case strings.HasPrefix(after, prefix):
		start = keyOf(table.Key{Part: part, Sort: after})
	default:
		return nil // after every item with the prefix
	}
	expr, err := keyCondition(part, prefix)
	if err != nil {
		return fmt.Errorf("query %s|%s: %w", part, prefix, err)
	}
	in := &dynamodb.QueryInput{
		TableName: aws.String(t.name), ConsistentRead: aws.Bool(true), Limit: t.queryPage,
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ExclusiveStartKey:         start,
	}
	pages := dynamodb.NewQueryPaginator(t.api, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query %s|%s: %w", part, prefix, err)
		}
		for _, av := range page.Items {
			key, err := keyFrom(av)
			if err != nil {
				return fmt.Errorf("query %s|%s: %w", part, prefix, err)
			}
			it, err := fromAttributes(av)
			if err != nil {
				return fmt.Errorf("query %s|%s: item %s: %w", part, prefix, key, err)
			}
			if err := fn(key.Sort, it); err != nil {
				return fmt.Errorf("query %s|%s: %w", part, prefix, err)
			}
		}
	}
	return nil
}

// keyFrom is the key of an item as DynamoDB returns it.
func keyFrom(av map[string]types.AttributeValue) (table.Key, error) {
	part, ok1 := av[table.KeyAttr].(*types.AttributeValueMemberS)
	sort, ok2 := av[table.SortAttr].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return table.Key{}, fmt.Errorf("an item has no string %s and %s", table.KeyAttr, table.SortAttr)
	}
	return table.Key{Part: part.Value, Sort: sort.Value}, nil
}

// writeErr turns a failed condition into a *table.ConditionFailedError carrying the old item.
func (t *Table) writeErr(op string, key table.Key, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	cf := &table.ConditionFailedError{Key: key}
	if len(ccf.Item) > 0 {
		old, convErr := fromAttributes(ccf.Item)
		if convErr != nil {
			return fmt.Errorf("%s %s: old item: %w", op, key, convErr)
		}
		cf.Item = old
	}
	return cf
}

func keyOf(key table.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		table.KeyAttr:  &types.AttributeValueMemberS{Value: key.Part},
		table.SortAttr: &types.AttributeValueMemberS{Value: key.Sort},
	}
}

// toAttributes marshals an item's values (string, int64, int, bool) with attributevalue.
func toAttributes(item table.Item) (map[string]types.AttributeValue, error) {
	av := make(map[string]types.AttributeValue, len(item)+1)
	for name, v := range item {
		if isKeyAttr(name) {
			continue // the key is the key argument, never an attribute of the item
		}
		m, err := marshalValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		av[name] = m
	}
	return av, nil
}

func marshalValue(v any) (types.AttributeValue, error) {
	switch v.(type) {
	case string, int64, int, bool:
		return attributevalue.Marshal(v)
	}
	return nil, fmt.Errorf("unsupported value type %T (want string, int64 or bool)", v)
}

// fromAttributes converts an item to table.Item without its key. Numbers become int64 (the
// attributevalue decoder would give float64 and lose precision beyond 2^53).
func fromAttributes(av map[string]types.AttributeValue) (table.Item, error) {
	it := make(table.Item, len(av))
	for name, v := range av {
		if isKeyAttr(name) {
			continue
		}
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			it[name] = v.Value
		case *types.AttributeValueMemberBOOL:
			it[name] = v.Value
		case *types.AttributeValueMemberN:
			n, err := strconv.ParseInt(v.Value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("attribute %s: number %q is not an int64: %w", name, v.Value, err)
			}
			it[name] = n
		case *types.AttributeValueMemberNULL:
			it[name] = nil
		default:
			var x any
			if err := attributevalue.Unmarshal(v, &x); err != nil {
				return nil, fmt.Errorf("attribute %s: %w", name, err)
			}
			it[name] = x
		}
	}
	return it, nil
}
