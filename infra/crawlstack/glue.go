package crawlstack

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsglue"
	"github.com/aws/jsii-runtime-go"
)

// recordColumnsJSON is the Glue columns of the records, one for each field of the JSON lines
// parse writes (shared/crawl/records.Record); that package's tests hold the Record type against it.
//
//go:embed record-columns.json
var recordColumnsJSON []byte

// glueColumn is one column of the records table.
type glueColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// recordColumns are the columns and partition keys of the records table.
func recordColumns() (columns, partitionKeys []glueColumn) {
	var f struct {
		Columns       []glueColumn `json:"columns"`
		PartitionKeys []glueColumn `json:"partitionKeys"`
	}
	if err := json.Unmarshal(recordColumnsJSON, &f); err != nil {
		panic(fmt.Sprintf("record-columns.json: %v", err)) // embedded, and tested
	}
	return f.Columns, f.PartitionKeys
}

// RecordsTableName is the name of the Glue table over records/.
const RecordsTableName = "records"

// recordsProjectionStart is the first day the dt partition projects: no crawl of this stack
// wrote a record before it. A query that names no dt reads every day since (a LIST each).
const recordsProjectionStart = "2026-01-01"

var unsafeGlueName = regexp.MustCompile(`[^a-z0-9_]+`)

// glueDatabaseName is the stack's name as a Glue database name: lower case, '_' for the rest.
func glueDatabaseName(stackName string) string {
	return strings.Trim(unsafeGlueName.ReplaceAllString(strings.ToLower(stackName), "_"), "_")
}

// newResultsTable defines a Glue database named after the stack and, in it, the table
// RecordsTableName over the records that parse writes under
// records/crawl=<crawl>/dt=<yyyy-mm-dd>/ (shared/crawl/records). Its partitions are projected
// (partition projection), so Athena queries a crawl as soon as its first records land, with no
// Glue crawler and no MSCK REPAIR: crawl is injected (a query names the crawl or crawls it
// reads, which keeps it from listing every crawl's records), dt is a date. The OpenX JSON SerDe
// matches the records' camelCase keys to the lower-case columns.
func newResultsTable(stack awscdk.Stack, bucket bucketRef) (awsglue.CfnDatabase, awsglue.CfnTable) {
	db := awsglue.NewCfnDatabase(stack, jsii.String("ResultsDatabase"), &awsglue.CfnDatabaseProps{
		CatalogId: stack.Account(),
		DatabaseInput: &awsglue.CfnDatabase_DatabaseInputProperty{
			Name:        jsii.String(glueDatabaseName(*stack.StackName())),
			Description: jsii.String("crawlstack results: the records table over the bucket's records/ (docs/results.md)"),
		},
	})
	columns, partitionKeys := recordColumns()
	glueColumns := func(cs []glueColumn) *[]*awsglue.CfnTable_ColumnProperty {
		out := make([]*awsglue.CfnTable_ColumnProperty, len(cs))
		for i, c := range cs {
			out[i] = &awsglue.CfnTable_ColumnProperty{Name: jsii.String(c.Name), Type: jsii.String(c.Type)}
		}
		return &out
	}
	location := "s3://" + *bucket.BucketName() + "/" + RecordsPrefix
	table := awsglue.NewCfnTable(stack, jsii.String("RecordsTable"), &awsglue.CfnTableProps{
		CatalogId:    stack.Account(),
		DatabaseName: db.Ref(),
		TableInput: &awsglue.CfnTable_TableInputProperty{
			Name:        jsii.String(RecordsTableName),
			Description: jsii.String("one row per page a crawl parsed; name the crawl: WHERE crawl = '<crawl>' (docs/results.md)"),
			TableType:   jsii.String("EXTERNAL_TABLE"),
			Parameters: map[string]*string{
				"EXTERNAL":                    jsii.String("TRUE"),
				"classification":              jsii.String("json"),
				"projection.enabled":          jsii.String("true"),
				"projection.crawl.type":       jsii.String("injected"),
				"projection.dt.type":          jsii.String("date"),
				"projection.dt.format":        jsii.String("yyyy-MM-dd"),
				"projection.dt.range":         jsii.String(recordsProjectionStart + ",NOW"),
				"projection.dt.interval":      jsii.String("1"),
				"projection.dt.interval.unit": jsii.String("DAYS"),
				"storage.location.template":   jsii.String(location + "crawl=${crawl}/dt=${dt}/"),
			},
			PartitionKeys: glueColumns(partitionKeys),
			StorageDescriptor: &awsglue.CfnTable_StorageDescriptorProperty{
				Columns:      glueColumns(columns),
				Location:     jsii.String(location),
				InputFormat:  jsii.String("org.apache.hadoop.mapred.TextInputFormat"),
				OutputFormat: jsii.String("org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat"),
				SerdeInfo: &awsglue.CfnTable_SerdeInfoProperty{
					SerializationLibrary: jsii.String("org.openx.data.jsonserde.JsonSerDe"),
					Parameters:           map[string]*string{"case.insensitive": jsii.String("TRUE")},
				},
			},
		},
	})
	return db, table
}
