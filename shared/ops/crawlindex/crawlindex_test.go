package crawlindex

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
)

// memStore is an object store in memory.
type memStore map[string][]byte

func (m memStore) List(_ context.Context, prefix string) ([]string, error) {
	var out []string
	for k := range maps.Keys(m) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (m memStore) Get(_ context.Context, key string) ([]byte, error) {
	b, ok := m[key]
	if !ok {
		return nil, errors.New("not found")
	}
	return b, nil
}

func (m memStore) Put(_ context.Context, key string, body []byte, _ string) error {
	m[key] = body
	return nil
}

// file assembles a WARC file of pages at the given URLs, named name.
func file(t *testing.T, name string, urls ...string) warcfile.File {
	t.Helper()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var records []warcfile.Record
	for _, u := range urls {
		r, err := warcfile.EncodeRecord(warcfile.Page{URL: u, Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
			Body: []byte("<p>" + u + "</p>"), FetchedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, r)
	}
	f, err := warcfile.Assemble(name, at, records)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestBuildIndexesEveryFileOfTheCrawl(t *testing.T) {
	ctx := context.Background()
	one := file(t, "2026/12/01/one.warc.gz", "http://b.test/", "http://a.test/x")
	two := file(t, "2026/12/02/two.warc.gz", "http://a.test/")
	s := memStore{
		"pages/c1/2026/12/01/one.warc.gz":      one.Data,
		"pages/c1/2026/12/01/one.warc.gz.cdxj": one.Index, // an index beside a file is not a file
		"pages/c1/2026/12/02/two.warc.gz":      two.Data,
		"pages/c10/2026/12/01/other.warc.gz":   []byte("another crawl's: not read"),
	}
	var seen []int
	r, err := Build(ctx, s, "c1", func(done, total int) { seen = append(seen, done*10+total) })
	if err != nil {
		t.Fatal(err)
	}
	// The oracle: the indexes the files' writer made, named by their paths under the crawl.
	want := warcfile.MergeIndexes(one.Index, two.Index)
	if r.Key != "indexes/c1.cdxj" || r.Files != 2 || r.Lines != 3 || !bytes.Equal(r.Index, want) || !bytes.Equal(s[r.Key], want) {
		t.Errorf("Build = %s, %d files, %d lines:\n%s\nwant indexes/c1.cdxj, 2 files, 3 lines:\n%s", r.Key, r.Files, r.Lines, s[r.Key], want)
	}
	if !slices.Equal(seen, []int{12, 22}) {
		t.Errorf("progress = %v, want 1 of 2, 2 of 2", seen)
	}
}

func TestBuildSaysWhatIsWrong(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, crawl, want string
		s                 memStore
	}{
		{"no files", "c1", "no WARC files under pages/c1/", memStore{}},
		{"a damaged file", "c1", "pages/c1/bad.warc.gz", memStore{"pages/c1/bad.warc.gz": []byte("garbage")}},
		{"not a crawl id", "../x/", "crawl id", memStore{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(ctx, tc.s, tc.crawl, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build = %v, want an error naming %q", err, tc.want)
			}
			if _, ok := tc.s[Key(tc.crawl)]; ok {
				t.Error("an index was stored after a failure")
			}
		})
	}
}
