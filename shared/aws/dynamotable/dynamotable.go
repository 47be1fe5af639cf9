// Package dynamotable is the table port on Amazon DynamoDB: one table with the string partition
// key "pk" and the TTL attribute "expiresAt". Conditions and updates become expressions built with
// the SDK's expression builder, which aliases every attribute name, so reserved words (status,
// url, owner, depth, name, count) are safe as attribute names.
package dynamotable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// API is the part of the DynamoDB client this package calls; *dynamodb.Client implements it.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
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
}

// New returns a Table for the table named tableName, calling c (normally a *dynamodb.Client built
// once per container).
func New(c API, tableName string) *Table {
	return &Table{api: c, name: tableName}
}

// Get returns the item with the key (a strongly consistent read), or table.ErrNotFound.
func (t *Table) Get(ctx context.Context, key string) (table.Item, error) {
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
func (t *Table) Put(ctx context.Context, key string, item table.Item, cond table.Cond) error {
	av, err := toAttributes(item)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	av[table.KeyAttr] = &types.AttributeValueMemberS{Value: key}
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
func (t *Table) Update(ctx context.Context, key string, u table.Update, cond table.Cond) (table.Item, error) {
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
func (t *Table) Delete(ctx context.Context, key string, cond table.Cond) error {
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

// ScanSegments is how many segments of the table a Scan reads at once (DynamoDB's parallel scan):
// a sequential scan reads a page of 1 MB at a time, some 100 ms each, so a crawl table of a
// million URLs (about 500 MB) would take minutes, past a Lambda's timeout.
const ScanSegments = 8

// Scan calls fn for every item whose key starts with prefix, with strongly consistent reads, its
// ScanSegments segments read at once and their pages' items decoded at once; fn is called for one
// item at a time. It stops at fn's first error and returns it wrapped.
func (t *Table) Scan(ctx context.Context, prefix string, fn func(key string, item table.Item) error) error {
	in := dynamodb.ScanInput{TableName: aws.String(t.name), ConsistentRead: aws.Bool(true), TotalSegments: aws.Int32(ScanSegments)}
	if prefix != "" {
		expr, err := prefixFilter(prefix)
		if err != nil {
			return fmt.Errorf("scan %q: %w", prefix, err)
		}
		in.FilterExpression = expr.Filter()
		in.ExpressionAttributeNames = expr.Names()
		in.ExpressionAttributeValues = expr.Values()
	}
	g, ctx := errgroup.WithContext(ctx)
	calls := &serialCalls{fn: fn}
	for seg := range int32(ScanSegments) {
		in := in
		in.Segment = aws.Int32(seg)
		g.Go(func() error {
			pages := dynamodb.NewScanPaginator(t.api, &in)
			for pages.HasMorePages() {
				page, err := pages.NextPage(ctx)
				if err != nil {
					return fmt.Errorf("scan %q: %w", prefix, err)
				}
				keys, items, err := decodePage(page.Items)
				if err != nil {
					return fmt.Errorf("scan %q: %w", prefix, err)
				}
				if err := calls.each(keys, items); err != nil {
					return fmt.Errorf("scan %q: %w", prefix, err)
				}
			}
			return nil
		})
	}
	err := g.Wait()
	if calls.err != nil {
		return fmt.Errorf("scan %q: %w", prefix, calls.err)
	}
	return err
}

// decodePage decodes the items of a page of a scan.
func decodePage(avs []map[string]types.AttributeValue) ([]string, []table.Item, error) {
	keys, items := make([]string, len(avs)), make([]table.Item, len(avs))
	for i, av := range avs {
		key, ok := av[table.KeyAttr].(*types.AttributeValueMemberS)
		if !ok {
			return nil, nil, fmt.Errorf("an item has no string %s", table.KeyAttr)
		}
		it, err := fromAttributes(av)
		if err != nil {
			return nil, nil, fmt.Errorf("item %s: %w", key.Value, err)
		}
		keys[i], items[i] = key.Value, it
	}
	return keys, items, nil
}

// serialCalls calls a scan's fn for the items its segments read, one item at a time, and never
// again once fn has returned an error (the port's Scan stops there): a segment that finds it
// stopped gets errScanStopped, and Scan returns fn's error (err), whichever segment ended first.
type serialCalls struct {
	fn  func(string, table.Item) error
	mu  sync.Mutex
	err error
}

var errScanStopped = errors.New("the scan stopped")

func (c *serialCalls) each(keys []string, items []table.Item) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, key := range keys {
		if c.err != nil {
			return errScanStopped
		}
		if err := c.fn(key, items[i]); err != nil {
			c.err = err
			return err
		}
	}
	return nil
}

// writeErr turns a failed condition into a *table.ConditionFailedError carrying the old item.
func (t *Table) writeErr(op, key string, err error) error {
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

func keyOf(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{table.KeyAttr: &types.AttributeValueMemberS{Value: key}}
}

// toAttributes marshals an item's values (string, int64, int, bool) with attributevalue.
func toAttributes(item table.Item) (map[string]types.AttributeValue, error) {
	av := make(map[string]types.AttributeValue, len(item)+1)
	for name, v := range item {
		if name == table.KeyAttr {
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
		if name == table.KeyAttr {
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
