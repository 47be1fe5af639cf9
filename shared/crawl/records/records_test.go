package records

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/local/fileblob/fileblobtest"
)

func TestKeyIsPartitionedByCrawlAndUTCDay(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 0, 0, 0, time.FixedZone("CET-ish", -3*3600)) // 01:00 UTC the next day
	if got, want := Key("seeds-1a2b", at, "abc"), "records/crawl=seeds-1a2b/dt=2026-12-02/abc.jsonl"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	if got, want := Dir("c.1"), "records/crawl=c.1/"; got != want {
		t.Errorf("Dir = %q, want %q", got, want)
	}
}

func TestReadGivesEachPageOnceAcrossFilesAndCrawls(t *testing.T) {
	s := fileblobtest.Filled(t, map[string]string{
		"records/crawl=c1/dt=2026-12-01/a.jsonl": `{"crawl":"c1","url":"http://a.test/","status":200}` + "\n" +
			`{"crawl":"c1","url":"http://a.test/x","status":404}` + "\n",
		// A redelivered parse message stored /x again, the next day.
		"records/crawl=c1/dt=2026-12-02/b.jsonl": `{"crawl":"c1","url":"http://a.test/x","status":404}` + "\n\n" +
			`{"crawl":"c1","url":"http://a.test/y","status":200,"data":{"price":"9.99"}}` + "\n",
		"records/crawl=c10/dt=2026-12-01/c.jsonl":  `{"crawl":"c10","url":"http://other.test/","status":200}` + "\n",
		"records/crawl=c1/dt=2026-12-01/notes.txt": "not a records file",
	})
	var urls []string
	var progress []int
	files, err := Read(context.Background(), s, "c1", func(done, total int) { progress = append(progress, done, total) },
		func(r Record) error {
			urls = append(urls, r.URL)
			if r.URL == "http://a.test/y" && r.Data["price"] != "9.99" {
				t.Errorf("data of /y = %v, want price 9.99", r.Data)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://a.test/", "http://a.test/x", "http://a.test/y"}; !slices.Equal(urls, want) {
		t.Errorf("read %v, want %v", urls, want)
	}
	if files != 2 {
		t.Errorf("files = %d, want 2", files)
	}
	if want := []int{1, 2, 2, 2}; !slices.Equal(progress, want) {
		t.Errorf("progress = %v, want %v", progress, want)
	}
}

func TestReadErrorsNameTheProblem(t *testing.T) {
	s := fileblobtest.Filled(t, map[string]string{
		"records/crawl=bad/dt=2026-12-01/a.jsonl": `{"url":"http://a.test/"}` + "\n" + `{"url": 12}` + "\n",
	})
	tests := []struct {
		crawl, want string
	}{
		{"bad", "records/crawl=bad/dt=2026-12-01/a.jsonl:2: not a record"},
		{"none", "crawl none has no records under records/crawl=none/"},
		{"", `crawl id ""`},
		{"a/b", `crawl id "a/b"`},
	}
	for _, tt := range tests {
		t.Run(tt.crawl, func(t *testing.T) {
			_, err := Read(context.Background(), s, tt.crawl, nil, func(Record) error { return nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read(%q) err = %v, want it to say %q", tt.crawl, err, tt.want)
			}
		})
	}
}

func TestReadStopsAtTheCallbacksError(t *testing.T) {
	s := fileblobtest.Filled(t, map[string]string{"records/crawl=c/dt=2026-12-01/a.jsonl": `{"url":"http://a.test/"}` + "\n" + `{"url":"http://a.test/b"}` + "\n"})
	stop := errors.New("disk full")
	n := 0
	_, err := Read(context.Background(), s, "c", nil, func(Record) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("err = %v after %d calls, want the callback's error after 1", err, n)
	}
}
