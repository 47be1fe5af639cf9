package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	samples "github.com/crawlstack/crawlstack/events"
	"github.com/crawlstack/crawlstack/shared/crawl/refusal"
	"github.com/crawlstack/crawlstack/shared/handler/scheduler"
)

// refusals records the refusals announced, each with whether the seed report was already there
// when it came, and fails the calls while fail is set.
type refusals struct {
	e        *env
	got      []refusal.Event
	reported []bool
	fail     error
}

func (r *refusals) PublishRefusal(ctx context.Context, ev refusal.Event) error {
	_, err := r.e.blobs.Get(ctx, ev.Report)
	r.got = append(r.got, ev)
	r.reported = append(r.reported, err == nil)
	return r.fail
}

func newRefusalEnv(t *testing.T) (*env, *refusals) {
	r := &refusals{}
	e := newEnvWith(t, func(d *scheduler.Deps) { d.Refusals = r })
	r.e = e
	return e, r
}

// TestARefusedSeedFileIsAnnouncedAfterItsReport: a spec with errors, a URL list with no good line
// and a file over the size limit each put one refusal, after their seed report, with the report's
// count and its first reasons; a good spec and a list with one good line put none.
func TestARefusedSeedFileIsAnnouncedAfterItsReport(t *testing.T) {
	for _, tt := range []struct {
		name, key, body string
		refused         bool
		spec            bool
		reason          string
	}{
		{"bad spec", "seeds/bad.yaml", "version: 1\nseeds: [http://127.0.0.1:9/]\nmax_pages: lots\nextract:\n  p: {css: 'p[['}\n", true, true, "max_pages: want a whole number"},
		{"no good line", "seeds/none.txt", "not a url\nftp://127.0.0.1/x\n", true, false, ""},
		{"good spec", "seeds/ok.yaml", "version: 1\nseeds: [http://127.0.0.1:9/]\n", false, true, ""},
		{"one good line", "seeds/some.txt", "not a url\nhttp://127.0.0.1:9/\n", false, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, r := newRefusalEnv(t)
			e.put(tt.key, tt.body)
			if err := e.h.StartCrawl(context.Background(), tt.key, "c-1"); err != nil {
				t.Fatal(err)
			}
			if !tt.refused {
				if len(r.got) != 0 {
					t.Errorf("refusals %+v for a seed file that crawls", r.got)
				}
				return
			}
			rep := e.report("c-1")
			if len(r.got) != 1 || !r.reported[0] {
				t.Fatalf("refusals %+v (report there first: %v), want one, after the report", r.got, r.reported)
			}
			ev := r.got[0]
			if ev.EventID != "crawlstack:c-1:refused" || ev.Crawl != "c-1" || ev.SeedFile != tt.key || ev.Spec != tt.spec ||
				ev.Errors != rep.Errors || ev.Errors == 0 || len(ev.Reasons) != len(rep.Bad) || ev.Report != "crawls/c-1/seeds.json" {
				t.Fatalf("refusal %+v, report %+v", ev, rep)
			}
			for i, b := range rep.Bad {
				if ev.Reasons[i].Line != b.Line || ev.Reasons[i].Error != b.Error {
					t.Errorf("reason %d = %+v, the report's %+v", i, ev.Reasons[i], b)
				}
			}
			if !strings.Contains(ev.Reasons[0].Error, tt.reason) {
				t.Errorf("first reason %q, want it to say %q", ev.Reasons[0].Error, tt.reason)
			}
		})
	}
}

// TestAnOversizeSeedFileIsAnnounced: the file over the limit that the S3 event names is refused
// before it is read, and announced with the reason.
func TestAnOversizeSeedFileIsAnnounced(t *testing.T) {
	e, r := newRefusalEnv(t)
	ev := sqsSample(t, samples.S3PutSeed)
	var s3ev events.S3Event
	if err := json.Unmarshal([]byte(ev.Records[0].Body), &s3ev); err != nil {
		t.Fatal(err)
	}
	s3ev.Records[0].S3.Object.Size = scheduler.MaxSeedBytes + 1
	body, err := json.Marshal(s3ev)
	if err != nil {
		t.Fatal(err)
	}
	ev.Records[0].Body = string(body)
	if resp, err := e.h.Handle(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %v, %v; want the record done", resp.BatchItemFailures, err)
	}
	if len(r.got) != 1 || !r.reported[0] || r.got[0].Errors != 1 || !strings.Contains(r.got[0].Reasons[0].Error, "over the") {
		t.Errorf("refusals %+v (after the report: %v), want one saying the file is over the limit", r.got, r.reported)
	}
}

// TestAFailedAnnouncementFailsTheSeedMessage: when the put fails, the record fails with the
// report written, and its redelivery announces the same refusal (same id): at least once.
func TestAFailedAnnouncementFailsTheSeedMessage(t *testing.T) {
	e, r := newRefusalEnv(t)
	e.put("seeds/bad.yaml", "version: 1\nseeds: [http://127.0.0.1:9/]\nmax_pages: lots\n")
	r.fail = errors.New("ThrottlingException: rate exceeded")
	err := e.h.StartCrawl(context.Background(), "seeds/bad.yaml", "c-2")
	if err == nil || !strings.Contains(err.Error(), "seeds/bad.yaml") || !strings.Contains(err.Error(), "ThrottlingException") {
		t.Fatalf("err = %v, want the failed announcement, naming the seed file", err)
	}
	if rep := e.report("c-2"); rep.Errors != 1 {
		t.Errorf("report %+v, want it written with the error", rep)
	}
	r.fail = nil
	if err := e.h.StartCrawl(context.Background(), "seeds/bad.yaml", "c-2"); err != nil {
		t.Fatal(err)
	}
	if len(r.got) != 2 || r.got[0].EventID != r.got[1].EventID || r.got[1].Errors != 1 {
		t.Errorf("refusals %+v, want the same one twice", r.got)
	}
}
