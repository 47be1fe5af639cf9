package meter

import (
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The expectations below are worked out by hand from DynamoDB's published size rules, SQS's
// 64 KiB rule and Lambda's millisecond rounding, not taken from the code's output.

func TestItemSize(t *testing.T) {
	tests := []struct {
		name string
		item map[string]types.AttributeValue
		want int
	}{
		{"empty", nil, 0},
		{"string", map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "abc"}}, 2 + 3},
		{"utf-8 bytes, not runes", map[string]types.AttributeValue{"é": &types.AttributeValueMemberS{Value: "ü"}}, 2 + 2},
		// 12345 significant digits: 5 digits -> 3 bytes, plus 1.
		{"number", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "123.45"}}, 1 + 4},
		// leading and trailing zeros trimmed: one digit -> 1 byte, plus 1.
		{"number zeros", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "-0.00100"}}, 1 + 2},
		{"number integer trailing zeros", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "1000"}}, 1 + 2},
		{"number exponent", map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "1.5E+10"}}, 1 + 2},
		{"binary", map[string]types.AttributeValue{"b": &types.AttributeValueMemberB{Value: []byte{1, 2, 3, 4}}}, 1 + 4},
		{"bool and null", map[string]types.AttributeValue{
			"t": &types.AttributeValueMemberBOOL{Value: true},
			"z": &types.AttributeValueMemberNULL{Value: true},
		}, 2 + 2},
		{"string set", map[string]types.AttributeValue{"ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}}, 2 + 3},
		{"number set", map[string]types.AttributeValue{"ns": &types.AttributeValueMemberNS{Value: []string{"7", "1234"}}}, 2 + 2 + 3},
		{"binary set", map[string]types.AttributeValue{"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}}}, 2 + 3},
		{"empty list", map[string]types.AttributeValue{"e": &types.AttributeValueMemberL{}}, 1 + 3},
		// 3 for the list, and each element 1 + its size: "ab" 2, 7 -> 2.
		{"list", map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{
			&types.AttributeValueMemberS{Value: "ab"}, &types.AttributeValueMemberN{Value: "7"},
		}}}, 1 + 3 + (1 + 2) + (1 + 2)},
		// 3 for the map, and the element 1 + name 1 + value 1.
		{"map", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"k": &types.AttributeValueMemberS{Value: "v"},
		}}}, 1 + 3 + (1 + 1 + 1)},
		{"nested", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberBOOL{Value: false}}},
		}}}, 1 + 3 + (1 + 1 + (3 + 1 + 1))},
		{"a crawl item", map[string]types.AttributeValue{
			"pk":    &types.AttributeValueMemberS{Value: "url#" + strings.Repeat("a", 64)},
			"state": &types.AttributeValueMemberS{Value: "fetched"},
			"depth": &types.AttributeValueMemberN{Value: "3"},
		}, (2 + 68) + (5 + 7) + (5 + 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := itemSize(tt.item); got != tt.want {
				t.Errorf("itemSize = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWriteUnits(t *testing.T) {
	tests := []struct {
		size int
		want float64
	}{
		{0, 1}, {1, 1}, {1024, 1}, {1025, 2}, {2048, 2}, {2049, 3}, {400 * 1024, 400},
	}
	for _, tt := range tests {
		if got := writeUnits(tt.size); got != tt.want {
			t.Errorf("writeUnits(%d) = %v, want %v", tt.size, got, tt.want)
		}
	}
}

func TestSQSChunks(t *testing.T) {
	tests := []struct {
		payload int
		want    int64
	}{
		{0, 1}, {1, 1}, {65536, 1}, {65537, 2}, {131072, 2}, {131073, 3}, {262144, 4}, {1 << 20, 16},
	}
	for _, tt := range tests {
		if got := sqsChunks(tt.payload); got != tt.want {
			t.Errorf("sqsChunks(%d) = %d, want %d", tt.payload, got, tt.want)
		}
	}
}

func TestLambdaGBSeconds(t *testing.T) {
	tests := []struct {
		d      time.Duration
		mem    int
		wantGB float64
	}{
		{1500 * time.Millisecond, 1024, 1.5},
		{100 * time.Millisecond, 128, 0.1 * 0.125},
		{1*time.Millisecond + time.Microsecond, 1024, 0.002}, // rounded up to 2 ms
		{0, 1024, 0.001}, // at least 1 ms
		{time.Second, 0, 0},
	}
	for _, tt := range tests {
		if got := cost.LambdaGBSeconds(tt.d, tt.mem); !near(got, tt.wantGB) {
			t.Errorf("cost.LambdaGBSeconds(%v, %d) = %v, want %v", tt.d, tt.mem, got, tt.wantGB)
		}
	}
}

func TestS3Class(t *testing.T) {
	tests := map[string]s3RequestClass{
		"PutObject": classA, "CopyObject": classA, "CreateMultipartUpload": classA, "UploadPart": classA,
		"CompleteMultipartUpload": classA, "ListObjectsV2": classA, "ListBuckets": classA, "CreateBucket": classA,
		"DeleteObjects": classA,
		"GetObject":     classB, "HeadObject": classB, "HeadBucket": classB, "GetBucketLocation": classB,
		"DeleteObject": classFree, "DeleteBucket": classFree, "AbortMultipartUpload": classFree,
	}
	for op, want := range tests {
		if got := s3Class(op); got != want {
			t.Errorf("s3Class(%s) = %d, want %d", op, got, want)
		}
	}
	if got := s3Units("GetObject", 503); got != (cost.Units{}) {
		t.Errorf("s3Units(GetObject, 503) = %+v, want nothing (5xx is not billed)", got)
	}
	if got := s3Units("HeadObject", 404); got != (cost.Units{S3ClassB: 1}) {
		t.Errorf("s3Units(HeadObject, 404) = %+v, want one class B (4xx is billed)", got)
	}
}

// near reports whether a and b agree to 1e-9 relative.
func near(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	m := b
	if m < 0 {
		m = -m
	}
	return d <= 1e-9*max(m, 1e-12)
}
