package crawlstack

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"testing"
)

// TestRecordsTableColumnsAreTheRecordsFields holds the Glue table's columns and partition keys,
// as the template has them, against record-columns.json, the copy of the record's fields that
// shared/crawl/records' tests hold the Record type against.
func TestRecordsTableColumnsAreTheRecordsFields(t *testing.T) {
	raw, err := os.ReadFile("record-columns.json")
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Columns       []map[string]any `json:"columns"`
		PartitionKeys []map[string]any `json:"partitionKeys"`
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.Columns) < 10 {
		t.Fatalf("record-columns.json has %d columns, want the record's fields", len(want.Columns))
	}
	in := props(t, logicalID(t, "AWS::Glue::Table", "RecordsTable"))["TableInput"].(map[string]any)
	sd := in["StorageDescriptor"].(map[string]any)
	got := toMaps(t, sd["Columns"])
	if !reflect.DeepEqual(got, want.Columns) {
		t.Errorf("columns in the template:\n  %v\nrecord-columns.json:\n  %v", got, want.Columns)
	}
	if got := toMaps(t, in["PartitionKeys"]); !reflect.DeepEqual(got, want.PartitionKeys) {
		t.Errorf("partition keys in the template %v, record-columns.json %v", got, want.PartitionKeys)
	}
	// Glue refuses a partition key that is also a column, and Athena reads names in lower case.
	lower := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	names := map[string]bool{}
	for _, c := range append(want.Columns, want.PartitionKeys...) {
		n := c["name"].(string)
		if names[n] || !lower.MatchString(n) {
			t.Errorf("column %q: repeated, or not a lower-case name", n)
		}
		names[n] = true
	}
}

func toMaps(t *testing.T, v any) []map[string]any {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("columns %v: not a list", v)
	}
	out := make([]map[string]any, len(list))
	for i, c := range list {
		m := c.(map[string]any)
		// The template spells the keys as CloudFormation does.
		out[i] = map[string]any{"name": m["Name"], "type": m["Type"]}
	}
	return out
}

// TestRecordsTableProjectsThePartitions: Athena finds a crawl's records where parse writes them
// (records/crawl=<crawl>/dt=<yyyy-mm-dd>/, shared/crawl/records.Key) with no Glue crawler, and reads
// them as JSON lines.
func TestRecordsTableProjectsThePartitions(t *testing.T) {
	db := logicalID(t, "AWS::Glue::Database", "ResultsDatabase")
	bucket := logicalID(t, "AWS::S3::Bucket", "Bucket")
	table := logicalID(t, "AWS::Glue::Table", "RecordsTable")
	matchProps(t, db, like(map[string]any{
		"CatalogId":     ref("AWS::AccountId"),
		"DatabaseInput": like(map[string]any{"Name": "test"}), // the test stack's name, lower-cased
	}))
	location := func(tail string) map[string]any {
		return map[string]any{"Fn::Join": []any{"", []any{"s3://", ref(bucket), tail}}}
	}
	matchProps(t, table, like(map[string]any{
		"CatalogId":    ref("AWS::AccountId"),
		"DatabaseName": ref(db),
		"TableInput": like(map[string]any{
			"Name":      "records",
			"TableType": "EXTERNAL_TABLE",
			"Parameters": equals(map[string]any{
				"EXTERNAL":                    "TRUE",
				"classification":              "json",
				"projection.enabled":          "true",
				"projection.crawl.type":       "injected",
				"projection.dt.type":          "date",
				"projection.dt.format":        "yyyy-MM-dd",
				"projection.dt.range":         "2026-01-01,NOW",
				"projection.dt.interval":      "1",
				"projection.dt.interval.unit": "DAYS",
				"storage.location.template":   location("/records/crawl=${crawl}/dt=${dt}/"),
			}),
			"StorageDescriptor": like(map[string]any{
				"Location":     location("/records/"),
				"InputFormat":  "org.apache.hadoop.mapred.TextInputFormat",
				"OutputFormat": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
				"SerdeInfo": equals(map[string]any{
					"SerializationLibrary": "org.openx.data.jsonserde.JsonSerDe",
					"Parameters":           map[string]any{"case.insensitive": "TRUE"},
				}),
			}),
		}),
	}))
}

func TestGlueDatabaseName(t *testing.T) {
	for in, want := range map[string]string{"Crawlstack": "crawlstack", "Crawl-Stack-2": "crawl_stack_2", "-x.y-": "x_y"} {
		if got := glueDatabaseName(in); got != want {
			t.Errorf("glueDatabaseName(%q) = %q, want %q", in, got, want)
		}
	}
}
