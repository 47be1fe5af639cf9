package crawlstack

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestLeastPrivilege compares every permission of each function's role with
// the exact list its handler needs: a missing grant and an extra one both fail.
func TestLeastPrivilege(t *testing.T) {
	consume := []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}
	send := []string{"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"}
	table := []string{"dynamodb:GetItem"}
	writes := []string{"dynamodb:PutItem", "dynamodb:UpdateItem"}
	// Writes and deletes are held to the partitions each function owns (dynamodb:LeadingKeys).
	const crawlsItemsSlots = "Table if dynamodb:LeadingKeys=c#*,dynamodb:LeadingKeys=k#*,dynamodb:LeadingKeys=p#*"
	on := func(resource string, actions ...[]string) []string {
		var out []string
		for _, as := range actions {
			for _, a := range as {
				out = append(out, a+" "+resource)
			}
		}
		return out
	}
	tests := []struct {
		fn   string
		want [][]string
	}{
		{"Schedule", [][]string{
			on("ScheduleQueue", consume, send), // consumes; splits seed files
			on("FetchQueue", send),
			on("FetchslowQueue", send), // the runs of polite hosts: the slow lane
			on("Table", table),
			on(crawlsItemsSlots, writes),
			on("Table if dynamodb:LeadingKeys=c#*", []string{"dynamodb:DeleteItem"}),                                   // an admission taken back: its URL item
			on("Table", []string{"dynamodb:BatchGetItem"}),                                                             // the crawl's counter shards, for its budget (the test context sets one) and its drain checks
			on("Table", []string{"dynamodb:Query"}),                                                                    // a drain check's exact tally of a crawl that looks drained
			on("arn:AWS::Partition:events:AWS::Region:AWS::AccountId:event-bus/default", []string{"events:PutEvents"}), // the crawl's end, on the default bus only
			on("Bucket/seeds/*", []string{"s3:GetObject"}),
			on("Bucket/recrawl/*", []string{"s3:GetObject"}), // the test context's recrawl prefix
			on("Bucket if s3:prefix=recrawl/*", []string{"s3:ListBucket"}),
			on("Bucket if s3:prefix=crawls/latest/*", []string{"s3:ListBucket"}), // a seed file's last crawl, for a recrawl
			on("Bucket/crawls/latest/*", []string{"s3:GetObject"}),
			on("Bucket/crawls/*", []string{"s3:PutObject"}),              // seed reports and crawl settings
			on("Bucket/crawls/*/spec.json", []string{"s3:GetObject"}),    // the crawl's settings
			on("Bucket/crawls/*/seeds.json", []string{"s3:GetObject"}),   // the report so far of a seed file read in chunks
			on("Bucket/quarantine/schedule/*", []string{"s3:PutObject"}), // poison messages
		}},
		{"Fetch", [][]string{
			on("FetchQueue", consume, send), // consumes; delayed re-queue
			on("ParseQueue", send),
			on("Table", table),
			on(crawlsItemsSlots, writes),
			// GetObject: a redelivered fetch message reads its stored page back (checkStored).
			on("Bucket/pages/*", []string{"s3:GetObject", "s3:PutObject"}),
			on("Bucket/crawls/*/spec.json", []string{"s3:GetObject"}), // the crawl's User-Agent, headers, rate, scope
			on("Bucket/quarantine/fetch/*", []string{"s3:PutObject"}),
		}},
		// The slow lane: fetch's handler, so fetch's grants, on its own queue and quarantine.
		{"Fetchslow", [][]string{
			on("FetchslowQueue", consume, send), // consumes; a run's rest and retries go back to it
			on("ParseQueue", send),
			on("Table", table),
			on(crawlsItemsSlots, writes),
			on("Bucket/pages/*", []string{"s3:GetObject", "s3:PutObject"}),
			on("Bucket/crawls/*/spec.json", []string{"s3:GetObject"}),
			on("Bucket/quarantine/fetchslow/*", []string{"s3:PutObject"}),
		}},
		{"Parse", [][]string{
			on("ParseQueue", consume),
			on("ScheduleQueue", send),
			on("Table", table),
			on("Table if dynamodb:LeadingKeys=c#*,dynamodb:LeadingKeys=k#*", writes), // no slot: parse books none
			on("Bucket/pages/*", []string{"s3:GetObject"}),
			on("Bucket/records/*", []string{"s3:PutObject", "s3:GetObject"}), // GetObject: a recrawl reuses a record
			on("Bucket/crawls/*/spec.json", []string{"s3:GetObject"}),        // the crawl's depth and extraction fields
			on("Bucket/quarantine/parse/*", []string{"s3:PutObject"}),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			want := map[string]bool{}
			for _, w := range slices.Concat(tt.want...) {
				want[w] = true
			}
			got := rolePermissions(t, tt.fn+"FunctionServiceRole")
			for p := range got {
				if !want[p] {
					t.Errorf("extra permission: %s", p)
				}
			}
			for p := range want {
				if !got[p] {
					t.Errorf("missing permission: %s", p)
				}
			}
		})
	}
}

// rolePermissions flattens every policy attached to the role into
// "action resource" strings, with resources named by logical id less its hash.
func rolePermissions(t *testing.T, roleName string) map[string]bool {
	t.Helper()
	return rolePermissionsIn(t, tmplJSON, roleName)
}

// rolePermissionsIn is rolePermissions in another parsed template (synthWith's).
func rolePermissionsIn(t *testing.T, template map[string]any, roleName string) map[string]bool {
	t.Helper()
	role := logicalIDIn(t, template, "AWS::IAM::Role", roleName)
	perms := map[string]bool{}
	for _, r := range resourcesOf(template) {
		if r["Type"] != "AWS::IAM::Policy" {
			continue
		}
		p := r["Properties"].(map[string]any)
		if !slices.ContainsFunc(p["Roles"].([]any), func(v any) bool { return render(v) == render(ref(role)) }) {
			continue
		}
		for _, s := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := s.(map[string]any)
			if st["Effect"] != "Allow" {
				t.Errorf("unexpected %v statement", st["Effect"])
			}
			suffix := ""
			if c, ok := st["Condition"]; ok {
				suffix = " if " + renderCondition(c)
			}
			for _, a := range list(st["Action"]) {
				for _, res := range list(st["Resource"]) {
					perms[fmt.Sprint(a)+" "+render(res)+suffix] = true
				}
			}
		}
	}
	return perms
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// render turns a CloudFormation value into a short readable name:
// {"Fn::GetAtt": ["Bucket83908E77", "Arn"]} becomes "Bucket".
func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if g, ok := x["Fn::GetAtt"].([]any); ok {
			return hashSuffix.ReplaceAllString(fmt.Sprint(g[0]), "")
		}
		if r, ok := x["Ref"]; ok {
			return hashSuffix.ReplaceAllString(fmt.Sprint(r), "")
		}
		if j, ok := x["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range j[1].([]any) {
				parts = append(parts, render(p))
			}
			return strings.Join(parts, fmt.Sprint(j[0]))
		}
	}
	return fmt.Sprint(v)
}

func renderCondition(c any) string {
	var parts []string
	for _, kv := range c.(map[string]any) {
		for k, v := range kv.(map[string]any) {
			for _, x := range list(v) {
				parts = append(parts, k+"="+render(x))
			}
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// TestTableWritesAreHeldToTheirPartitions: every statement that lets a function write or delete
// items of the table holds it to partition key patterns (ForAllValues:StringLike on
// dynamodb:LeadingKeys), none of which is the opt-out list's: no function may change it.
func TestTableWritesAreHeldToTheirPartitions(t *testing.T) {
	writes := 0
	for _, r := range resourcesOf(tmplJSON) {
		if r["Type"] != "AWS::IAM::Policy" {
			continue
		}
		for _, s := range r["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := s.(map[string]any)
			if !slices.ContainsFunc(list(st["Action"]), func(a any) bool {
				return a == "dynamodb:PutItem" || a == "dynamodb:UpdateItem" || a == "dynamodb:DeleteItem"
			}) {
				continue
			}
			writes++
			cond, _ := st["Condition"].(map[string]any)
			like, _ := cond["ForAllValues:StringLike"].(map[string]any)
			keys := list(like["dynamodb:LeadingKeys"])
			if len(cond) != 1 || len(like) != 1 || len(keys) == 0 {
				t.Errorf("a table write not held to partitions: %v", st)
				continue
			}
			for _, k := range keys {
				if k == "x#optout" || k == "x#*" || k == "*" {
					t.Errorf("a function may write %v: %v", k, st)
				}
			}
		}
	}
	if writes != 5 {
		t.Errorf("%d statements let a function write the table, want 5: the writes of schedule, fetch, fetchslow and parse, and schedule's deletes", writes)
	}
}

// samePermissions reports each permission of role that got has and want has not, and the reverse.
func samePermissions(t *testing.T, role string, got, want map[string]bool) {
	t.Helper()
	for p := range got {
		if !want[p] {
			t.Errorf("%s: extra permission %s", role, p)
		}
	}
	for p := range want {
		if !got[p] {
			t.Errorf("%s: missing permission %s", role, p)
		}
	}
}
