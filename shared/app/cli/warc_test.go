package cli

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
)

// TestTheDemoCrawlsArchivePassAnIndependentReader runs `make run`'s crawl (`crawl demo` with its
// defaults, into a temp state dir) and has warcio.js read every WARC file it wrote: every digest
// is right, and each file's CDXJ index resolves every page fetched.
func TestTheDemoCrawlsArchivePassAnIndependentReader(t *testing.T) {
	state := t.TempDir()
	code, stdout, stderr := runMain(t, "demo", "--", "--state", state, "--json")
	if code != ExitOK {
		t.Fatalf("crawl demo exit %d\n%s\n%s", code, stdout, stderr)
	}
	// demo prints its closing words after run's JSON summary.
	summary, _, _ := strings.Cut(stdout[strings.LastIndex(stdout, "\n{")+1:], "\n")
	sum := lastJSON(t, summary)
	var files []string
	err := filepath.WalkDir(filepath.Join(state, "blobs", "pages"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".warc.gz") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Fetched == 0 || len(files) == 0 {
		t.Fatalf("the demo crawl fetched %d pages into %d WARC files", sum.Fetched, len(files))
	}
	got := warctest.Check(t, files...)
	t.Logf("%d pages fetched; warcio.js read %+v", sum.Fetched, got)
	if got.Files != len(files) || got.Warcinfo != len(files) || int64(got.Responses) != sum.Fetched ||
		got.Requests != got.Responses || got.IndexLines != got.Responses || got.Resolved != got.Responses {
		t.Errorf("warcio.js read %+v in %d files; want a warcinfo record each, and a response, a request and an index line that resolves for each of the %d pages fetched",
			got, len(files), sum.Fetched)
	}

	// crawl index builds the crawl's index from the files: the lines of the indexes beside them,
	// which warcio.js just checked, with each file named by its path under the crawl's prefix.
	out := filepath.Join(t.TempDir(), "crawl.cdxj")
	code, stdout, stderr = runMain(t, "index", "--state", state, "-o", out, sum.Crawl)
	if code != ExitOK || !strings.Contains(stdout, fmt.Sprintf("indexed %d pages of %d WARC files", sum.Fetched, len(files))) {
		t.Fatalf("crawl index: exit %d\n%s\n%s", code, stdout, stderr)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := os.ReadFile(filepath.Join(state, "blobs", "indexes", sum.Crawl+".cdxj"))
	if err != nil || !bytes.Equal(stored, built) {
		t.Errorf("the index stored in the state dir differs from -o's copy (%v)", err)
	}
	var beside [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f + warcfile.IndexSuffix)
		if err != nil {
			t.Fatal(err)
		}
		beside = append(beside, b)
	}
	dated := regexp.MustCompile(`"filename":"\d{4}/\d{2}/\d{2}/`)
	if got, want := dated.ReplaceAll(built, []byte(`"filename":"`)), warcfile.MergeIndexes(beside...); !bytes.Equal(got, want) {
		t.Errorf("crawl index wrote\n%s\nthe files' own indexes say\n%s", built, want)
	}
	if code, _, stderr := runMain(t, "index", "--state", state, "no-such-crawl"); code != ExitFailed ||
		!strings.Contains(stderr, "no WARC files under pages/no-such-crawl/") {
		t.Errorf("crawl index of an unknown crawl: exit %d, %s", code, stderr)
	}
}
