package meter

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// sqsChunk is the payload size that SQS bills as one request.
const sqsChunk = 64 * 1024

// sqsChunks returns the SQS requests one call with payload bytes of payload is billed as: one
// per started 64 KiB, and at least one.
func sqsChunks(payload int) int64 {
	if payload <= sqsChunk {
		return 1
	}
	return int64((payload + sqsChunk - 1) / sqsChunk)
}

// writeUnitSize is the item size that one DynamoDB write request unit covers.
const writeUnitSize = 1024

// writeUnits returns the write request units of a standard write of an item of size bytes: one
// per started KB, and at least one.
func writeUnits(size int) float64 {
	if size <= writeUnitSize {
		return 1
	}
	return float64((size + writeUnitSize - 1) / writeUnitSize)
}

// itemSize returns the size of an item by DynamoDB's rules ("DynamoDB item sizes and formats"
// in the developer guide): the sum of each attribute's name length in UTF-8 bytes and its value
// size. It is exact for strings, binaries, booleans, nulls, sets, lists and maps, and approximate
// for numbers, as the rule itself is.
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

// valueSize returns the size of one attribute value without its name.
func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		// 3 bytes for the list, and 1 byte per element on top of its size.
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		// 3 bytes for the map, and 1 byte per element on top of its name and value.
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize approximates the size of a number as DynamoDB's rule gives it: 1 byte per two
// significant digits (leading and trailing zeros trimmed), plus 1 byte.
func numberSize(s string) int {
	s = strings.TrimLeft(strings.TrimSpace(s), "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i] // the exponent moves the point; it adds no significant digit
	}
	s = strings.Replace(s, ".", "", 1)
	s = strings.Trim(s, "0")
	return (len(s)+1)/2 + 1
}
