package meter

import (
	"errors"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// withConsumedCapacity returns the DynamoDB input with ReturnConsumedCapacity=TOTAL when the
// caller left it unset: a changed copy, so the caller's input stays as it was. Inputs without
// the field (control-plane calls, which are not billed per request) are returned unchanged.
func withConsumedCapacity(params any) any {
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return setTotal(in, func(c *dynamodb.GetItemInput) *types.ReturnConsumedCapacity { return &c.ReturnConsumedCapacity })
	case *dynamodb.PutItemInput:
		return setTotal(in, func(c *dynamodb.PutItemInput) *types.ReturnConsumedCapacity { return &c.ReturnConsumedCapacity })
	case *dynamodb.UpdateItemInput:
		return setTotal(in, func(c *dynamodb.UpdateItemInput) *types.ReturnConsumedCapacity { return &c.ReturnConsumedCapacity })
	case *dynamodb.DeleteItemInput:
		return setTotal(in, func(c *dynamodb.DeleteItemInput) *types.ReturnConsumedCapacity { return &c.ReturnConsumedCapacity })
	case *dynamodb.QueryInput:
		return setTotal(in, func(c *dynamodb.QueryInput) *types.ReturnConsumedCapacity { return &c.ReturnConsumedCapacity })
	case *dynamodb.ScanInput:
		return setTotal(in, func(c *dynamodb.ScanInput) *types.ReturnConsumedCapacity { return &c.ReturnConsumedCapacity })
	case *dynamodb.BatchGetItemInput:
		return setTotal(in, func(c *dynamodb.BatchGetItemInput) *types.ReturnConsumedCapacity { return &c.ReturnConsumedCapacity })
	case *dynamodb.BatchWriteItemInput:
		return setTotal(in, func(c *dynamodb.BatchWriteItemInput) *types.ReturnConsumedCapacity { return &c.ReturnConsumedCapacity })
	case *dynamodb.TransactGetItemsInput:
		return setTotal(in, func(c *dynamodb.TransactGetItemsInput) *types.ReturnConsumedCapacity {
			return &c.ReturnConsumedCapacity
		})
	case *dynamodb.TransactWriteItemsInput:
		return setTotal(in, func(c *dynamodb.TransactWriteItemsInput) *types.ReturnConsumedCapacity {
			return &c.ReturnConsumedCapacity
		})
	case *dynamodb.ExecuteStatementInput:
		return setTotal(in, func(c *dynamodb.ExecuteStatementInput) *types.ReturnConsumedCapacity {
			return &c.ReturnConsumedCapacity
		})
	case *dynamodb.BatchExecuteStatementInput:
		return setTotal(in, func(c *dynamodb.BatchExecuteStatementInput) *types.ReturnConsumedCapacity {
			return &c.ReturnConsumedCapacity
		})
	case *dynamodb.ExecuteTransactionInput:
		return setTotal(in, func(c *dynamodb.ExecuteTransactionInput) *types.ReturnConsumedCapacity {
			return &c.ReturnConsumedCapacity
		})
	}
	return params
}

// setTotal returns in itself when field(in) is set, or else a copy of in with the field TOTAL.
func setTotal[T any](in *T, field func(*T) *types.ReturnConsumedCapacity) *T {
	if in == nil || *field(in) != "" {
		return in
	}
	c := *in
	*field(&c) = types.ReturnConsumedCapacityTotal
	return &c
}

// dynamoUnits returns the units of one answered DynamoDB attempt: those of the output's
// ConsumedCapacity, those of a failed conditional write, or none.
func dynamoUnits(op string, input, result any, err error) cost.Units {
	if err != nil {
		return cost.Units{DynamoDBWriteUnits: failedWriteUnits(input, err)}
	}
	ccs, ok := consumedCapacity(result)
	if !ok {
		return cost.Units{} // not a data-plane call: not billed per request
	}
	if len(ccs) == 0 {
		return cost.Units{DynamoDBUnmetered: 1}
	}
	write := isWrite(op, input)
	var u cost.Units
	for _, cc := range ccs {
		r, w := capacityUnits(cc, write)
		u.DynamoDBReadUnits += r
		u.DynamoDBWriteUnits += w
	}
	return u
}

// consumedCapacity returns the ConsumedCapacity entries of a data-plane output, and false for
// any other output.
func consumedCapacity(result any) ([]types.ConsumedCapacity, bool) {
	one := func(cc *types.ConsumedCapacity) ([]types.ConsumedCapacity, bool) {
		if cc == nil {
			return nil, true
		}
		return []types.ConsumedCapacity{*cc}, true
	}
	switch o := result.(type) {
	case *dynamodb.GetItemOutput:
		return one(o.ConsumedCapacity)
	case *dynamodb.PutItemOutput:
		return one(o.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		return one(o.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		return one(o.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		return one(o.ConsumedCapacity)
	case *dynamodb.ScanOutput:
		return one(o.ConsumedCapacity)
	case *dynamodb.ExecuteStatementOutput:
		return one(o.ConsumedCapacity)
	case *dynamodb.BatchGetItemOutput:
		return o.ConsumedCapacity, true
	case *dynamodb.BatchWriteItemOutput:
		return o.ConsumedCapacity, true
	case *dynamodb.TransactGetItemsOutput:
		return o.ConsumedCapacity, true
	case *dynamodb.TransactWriteItemsOutput:
		return o.ConsumedCapacity, true
	case *dynamodb.BatchExecuteStatementOutput:
		return o.ConsumedCapacity, true
	case *dynamodb.ExecuteTransactionOutput:
		return o.ConsumedCapacity, true
	}
	return nil, false
}

// capacityUnits splits one ConsumedCapacity into read and write units. It takes the
// ReadCapacityUnits and WriteCapacityUnits when the answer gives them, and otherwise books the
// CapacityUnits total as writes for a write operation and as reads for any other.
func capacityUnits(cc types.ConsumedCapacity, write bool) (read, wrote float64) {
	if cc.ReadCapacityUnits != nil {
		read = *cc.ReadCapacityUnits
	}
	if cc.WriteCapacityUnits != nil {
		wrote = *cc.WriteCapacityUnits
	}
	if read == 0 && wrote == 0 && cc.CapacityUnits != nil {
		if write {
			wrote = *cc.CapacityUnits
		} else {
			read = *cc.CapacityUnits
		}
	}
	return read, wrote
}

// isWrite reports whether a DynamoDB operation writes. PartiQL statements write unless they
// are all SELECTs.
func isWrite(op string, input any) bool {
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
		return true
	case "ExecuteStatement":
		if in, ok := input.(*dynamodb.ExecuteStatementInput); ok && in.Statement != nil {
			return !isSelect(*in.Statement)
		}
	case "BatchExecuteStatement":
		if in, ok := input.(*dynamodb.BatchExecuteStatementInput); ok {
			for _, s := range in.Statements {
				if s.Statement != nil && !isSelect(*s.Statement) {
					return true
				}
			}
		}
	case "ExecuteTransaction":
		if in, ok := input.(*dynamodb.ExecuteTransactionInput); ok {
			for _, s := range in.TransactStatements {
				if s.Statement != nil && !isSelect(*s.Statement) {
					return true
				}
			}
		}
	}
	return false
}

// isSelect reports whether a PartiQL statement is a SELECT.
func isSelect(stmt string) bool {
	return strings.HasPrefix(strings.ToUpper(strings.TrimSpace(stmt)), "SELECT")
}

// failedWriteUnits returns the write units that DynamoDB bills for a failed conditional write,
// which answers with an error and no ConsumedCapacity: one unit per started KB of the larger of
// the item sent (PutItem) and the old item that the error returned, and at least one. A
// TransactWriteItems cancelled by a failed condition bills each of its items at the
// transactional rate (twice the standard one). Every other error is billed nothing.
func failedWriteUnits(input any, err error) float64 {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		size := itemSize(ccf.Item)
		if in, ok := input.(*dynamodb.PutItemInput); ok {
			size = max(size, itemSize(in.Item))
		}
		return writeUnits(size)
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		in, ok := input.(*dynamodb.TransactWriteItemsInput)
		if !ok || !conditionFailed(tce.CancellationReasons) {
			return 0
		}
		total := 0.0
		for i, item := range in.TransactItems {
			size := 0
			if i < len(tce.CancellationReasons) {
				size = itemSize(tce.CancellationReasons[i].Item)
			}
			if item.Put != nil {
				size = max(size, itemSize(item.Put.Item))
			}
			total += 2 * writeUnits(size)
		}
		return total
	}
	return 0
}

// conditionFailed reports whether a transaction's cancellation reasons name a failed condition.
// With no reasons at all it assumes one did, so a cancelled write is never left uncounted.
func conditionFailed(reasons []types.CancellationReason) bool {
	if len(reasons) == 0 {
		return true
	}
	for _, r := range reasons {
		if r.Code != nil && *r.Code == "ConditionalCheckFailed" {
			return true
		}
	}
	return false
}
