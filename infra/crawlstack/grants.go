package crawlstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// tableActions are the reads by key of each handler; its writes and deletes are
// granted apart, each held to the partitions the handler owns (tableWrites,
// tableDeletes). No Scan at all, and
// no Query but schedule's tally of a crawl that looks drained (granted apart),
// which queries that crawl's partitions: every other access is by key. Only schedule deletes: the frontier takes an
// admission back (crawlstate Unadmit) when it cannot reserve its budget.
// Fetch puts an item for a redirect's target (crawlstate Reject), parse its
// done marks. Schedule also reads a crawl's counter shards with BatchGetItem
// when a budget is set, granted apart. shared/testkit/stacke2e holds every call of a
// crawl through the deployed stack against these grants.
var tableActions = map[string][]string{
	FnSchedule: {"dynamodb:GetItem"},
	FnFetch:    {"dynamodb:GetItem"},
	FnParse:    {"dynamodb:GetItem"},
}

// The partitions of the table (docs/state.md), as dynamodb:LeadingKeys patterns: a crawl's items
// (URLs, groups, marks, counter shards, host budgets), the crawl items, the hosts' politeness
// slots, and the opt-out list.
const (
	crawlParts  = "c#*"
	crawlItems  = "k#*"
	slotParts   = "p#*"
	optOutPart  = "x#optout"
	leadingKeys = "dynamodb:LeadingKeys"
)

// tableWrites are the partitions each handler writes (PutItem, UpdateItem), from its code:
// schedule admits URLs and books their hosts' slots, starts crawls and runs their checks; fetch
// claims and ends URLs, books and throttles slots, and gives page budget back to the crawl item;
// parse marks pages parsed and counts. Every function's ledger counts into the crawl's shards and
// may stop an over-budget crawl on its crawl item. No function writes the opt-out list: only the
// crawl command does (crawl optout, crawl purge), with the operator's own credentials.
var tableWrites = map[string][]string{
	FnSchedule: {crawlParts, crawlItems, slotParts},
	FnFetch:    {crawlParts, crawlItems, slotParts},
	FnParse:    {crawlParts, crawlItems},
}

// tableDeletes are the partitions each handler deletes items of: only schedule deletes, the URL
// item of an admission it takes back (crawlstate Unadmit).
var tableDeletes = map[string][]string{
	FnSchedule: {crawlParts},
}

// byLeadingKeys holds a statement on the table to the items whose partition key matches one of
// the patterns. Every item action names its item's key, so the key is always there to match.
func byLeadingKeys(patterns []string) *map[string]any {
	return &map[string]any{"ForAllValues:StringLike": map[string]any{leadingKeys: patterns}}
}

// sendsTo lists, per function, the queues it sends to. Consuming its own
// queue is granted by its event source mapping.
var sendsTo = map[string][]string{
	FnSchedule: {FnSchedule, FnFetch}, // seed files split into link batches; admitted URLs
	FnFetch:    {FnFetch, FnParse},    // delayed re-queue for politeness; stored pages
	FnParse:    {FnSchedule},          // discovered links
}

// grantPipeline gives each function only what its handler does: its queues,
// item access to the table, and its S3 prefixes.
func grantPipeline(cfg Config, bucket bucketRef, table tableRef, queues map[string]pipelineQueue, fns map[string]fnResources) {
	for _, name := range []string{FnSchedule, FnFetch, FnParse} { // fixed order: a stable template
		for _, t := range sendsTo[name] {
			queues[t].Queue.GrantSendMessages(fns[name].Function)
		}
		fns[name].Function.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(tableActions[name]...),
			Resources: jsii.Strings(*table.TableArn()),
		}))
		fns[name].Function.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:    jsii.Strings("dynamodb:PutItem", "dynamodb:UpdateItem"),
			Resources:  jsii.Strings(*table.TableArn()),
			Conditions: byLeadingKeys(tableWrites[name]),
		}))
		if parts := tableDeletes[name]; len(parts) > 0 {
			fns[name].Function.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:    jsii.Strings("dynamodb:DeleteItem"),
				Resources:  jsii.Strings(*table.TableArn()),
				Conditions: byLeadingKeys(parts),
			}))
		}
	}

	// Every handler sets malformed messages aside under quarantine/<fn>/, and only there.
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		fns[name].Function.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:PutObject"),
			Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(QuarantinePrefix + name + "/*"))),
		}))
	}

	grantScheduleReads(cfg, bucket, table, fns[FnSchedule].Function)

	// Each handler reads a crawl's settings (crawls/<crawl>/spec.json, which schedule writes when
	// the crawl starts) once per process: the frontier its scope, pages and rate, fetch its
	// User-Agent, headers and rate, parse its depth and extraction fields.
	for _, name := range []string{FnSchedule, FnFetch, FnParse} {
		fns[name].Function.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("s3:GetObject"),
			Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(CrawlsPrefix + "*/" + SpecObject))),
		}))
	}

	// A seed file read in chunks over several invocations goes on from the report its last
	// checkpoint wrote (shared/handler/scheduler seedchunks.go).
	fns[FnSchedule].Function.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(CrawlsPrefix + "*/" + SeedReportObject))),
	}))

	fetch := fns[FnFetch].Function
	// GetObject: a fetch message delivered again for a page already stored reads the page back
	// before it sends its parse message again (shared/handler/fetcher checkStored). No
	// AbortMultipartUpload: the S3 adapter (shared/aws/s3blob) writes every object with one PutObject.
	fetch.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:PutObject", "s3:GetObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(PagesPrefix + "*"))),
	}))

	parse := fns[FnParse].Function
	parse.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(PagesPrefix + "*"))),
	}))
	// GetObject: a recrawl reuses the previous crawl's record of a page it found unchanged
	// (shared/handler/parser recrawl.go).
	parse.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:PutObject", "s3:GetObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(RecordsPrefix + "*"))),
	}))
}

// grantScheduleReads gives schedule what it reads and lists besides its queue and the table's
// items: the seed files, the crawls' ledgers and partitions for its checks, the seed files'
// pointers to their last crawls, and the crawls' reports it writes.
func grantScheduleReads(cfg Config, bucket bucketRef, table tableRef, schedule awslambda.Function) {
	seedReads := []string{*bucket.ArnForObjects(jsii.String(SeedsPrefix + "*"))}
	if cfg.RecrawlPrefix != SeedsPrefix {
		seedReads = append(seedReads, *bucket.ArnForObjects(jsii.String(cfg.RecrawlPrefix + "*")))
	}
	schedule.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings(seedReads...),
	}))
	// A crawl's ledger is its counter shards, read together (BatchGetItem) to check its budget
	// (budgetUsd 0 is none), and by its drain checks (finishEvent: shared/crawl/finish), which also
	// query the crawl's partitions once it looks drained, to tally its items exactly.
	if cfg.BudgetUSD > 0 || cfg.FinishEvent {
		schedule.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("dynamodb:BatchGetItem"),
			Resources: jsii.Strings(*table.TableArn()),
		}))
	}
	if cfg.FinishEvent {
		schedule.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("dynamodb:Query"),
			Resources: jsii.Strings(*table.TableArn()),
		}))
	}
	schedule.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: jsii.Strings(*bucket.BucketArn()),
		Conditions: &map[string]any{
			"StringLike": map[string]any{"s3:prefix": []string{cfg.RecrawlPrefix + "*"}},
		},
	}))

	schedule.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:PutObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(CrawlsPrefix + "*"))),
	}))
	// A crawl started from a seed file recrawls the file's last crawl, which the file's pointer
	// names (shared/handler/scheduler previous.go): listed, then read.
	schedule.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: jsii.Strings(*bucket.BucketArn()),
		Conditions: &map[string]any{
			"StringLike": map[string]any{"s3:prefix": []string{LatestPrefix + "*"}},
		},
	}))
	schedule.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(LatestPrefix + "*"))),
	}))
}
