package dynamotable

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/cenkalti/backoff/v4"

	"github.com/crawlstack/crawlstack/shared/port/table"
)

// batchGetMax is the most keys one BatchGetItem takes.
const batchGetMax = 100

// GetMany reads the items with the keys, strongly consistent, with one BatchGetItem per 100 keys.
// Keys that DynamoDB leaves unprocessed (throttling, or its 16 MB answer limit) are asked for
// again with exponential backoff, as the DynamoDB developer guide advises, until ctx ends.
func (t *Table) GetMany(ctx context.Context, keys []table.Key) (map[table.Key]table.Item, error) {
	out := make(map[table.Key]table.Item, len(keys))
	seen := make(map[table.Key]bool, len(keys))
	var chunk []map[string]types.AttributeValue
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := t.batchGet(ctx, chunk, out)
		chunk = chunk[:0]
		return err
	}
	for _, k := range keys {
		if err := k.Check(); err != nil {
			return nil, fmt.Errorf("get %d items: %w", len(keys), err)
		}
		if seen[k] {
			continue // BatchGetItem refuses a request that names a key twice
		}
		seen[k] = true
		chunk = append(chunk, keyOf(k))
		if len(chunk) == batchGetMax {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// batchGet reads up to 100 keys into out, asking again for the unprocessed ones.
func (t *Table) batchGet(ctx context.Context, keys []map[string]types.AttributeValue, out map[table.Key]table.Item) error {
	bo := backoff.WithContext(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(50*time.Millisecond), backoff.WithMaxInterval(2*time.Second),
		backoff.WithMaxElapsedTime(time.Minute)), ctx)
	req := map[string]types.KeysAndAttributes{t.name: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	for {
		res, err := t.api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return fmt.Errorf("get %d items: %w", len(keys), err)
		}
		for _, av := range res.Responses[t.name] {
			key, err := keyFrom(av)
			if err != nil {
				return fmt.Errorf("get %d items: %w", len(keys), err)
			}
			it, err := fromAttributes(av)
			if err != nil {
				return fmt.Errorf("get %s: %w", key, err)
			}
			out[key] = it
		}
		left, ok := res.UnprocessedKeys[t.name]
		if !ok || len(left.Keys) == 0 {
			return nil
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			return fmt.Errorf("get %d items: %d still unprocessed after a minute of retries", len(keys), len(left.Keys))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("get %d items: %w", len(keys), ctx.Err())
		case <-timer.C:
		}
		left.ConsistentRead = aws.Bool(true)
		req = map[string]types.KeysAndAttributes{t.name: left}
	}
}
