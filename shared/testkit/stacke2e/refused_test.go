package stacke2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/crawlstack/crawlstack/shared/aws/s3blob"
	"github.com/crawlstack/crawlstack/shared/crawl/refusal"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
)

// TestIntegrationARefusedSpecPutsAnEvent: a crawl spec over the stack's page bound, uploaded
// under seeds/ as a user would, is refused by the real schedule bootstrap: its seed report says
// why, and one "Seed File Refused" event with that reason goes to the default bus, by a call that
// schedule's role allows. Nothing is crawled.
func TestIntegrationARefusedSpecPutsAnEvent(t *testing.T) {
	d := deploy(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	bucket := d.stack.Functions["schedule"].Env["CRAWL_BUCKET"]
	const spec = "version: 1\nseeds: [http://127.0.0.1:9/]\nmax_pages: 999999\n"
	if _, err := d.clients.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("seeds/big.yaml"),
		Body: bytes.NewReader([]byte(spec)), ContentType: aws.String("application/yaml")}); err != nil {
		t.Fatalf("upload the spec: %v", err)
	}
	if err := d.runner(nil).Run(ctx); err != nil {
		t.Fatalf("the queues did not empty within %v: %v", runTimeout, err)
	}
	for _, name := range []string{"fetch", fetchSlow} {
		if n := invocations(d, name); n != 0 {
			t.Errorf("%s was invoked %d times for a refused spec", name, n)
		}
	}

	d.bus.mu.Lock()
	entries := append([]busEntry(nil), d.bus.entries...)
	d.bus.mu.Unlock()
	if len(entries) != 1 {
		t.Fatalf("%d events put, want the one refusal: %+v", len(entries), entries)
	}
	en := entries[0]
	var ev refusal.Event
	if en.EventBusName != "default" || en.Source != "crawlstack" || en.DetailType != "Seed File Refused" ||
		json.Unmarshal([]byte(en.Detail), &ev) != nil {
		t.Fatalf("event %+v, want a Seed File Refused of the crawlstack source on the default bus", en)
	}
	b, err := s3blob.New(d.clients.S3, bucket).Get(ctx, ev.Report)
	if err != nil {
		t.Fatalf("the event names the report %s: %v", ev.Report, err)
	}
	var report scheduler.SeedReport
	if err := json.Unmarshal(b, &report); err != nil || report.Errors != 1 {
		t.Fatalf("seed report %s (%v)", b, err)
	}
	if ev.SeedFile != "seeds/big.yaml" || !ev.Spec || ev.Crawl != report.Crawl || ev.EventID != refusal.EventID(report.Crawl) ||
		ev.Errors != 1 || len(ev.Reasons) != 1 || ev.Reasons[0].Error != report.Bad[0].Error ||
		!strings.Contains(ev.Reasons[0].Error, "max_pages: 999999 is over the stack's bound") {
		t.Errorf("event detail %s, report %s", en.Detail, b)
	}
	checkAllowed(t, "schedule", d.stack.Functions["schedule"], d.calls("schedule"))
}
