// Package crawlindex builds a crawl's CDXJ index from its stored WARC files, as one object
// ("indexes/<crawl>.cdxj") that pywb and other replay tools read. A deployed stack stores its WARC
// files without an index beside each (an S3 PUT fewer per fetch batch: docs/cost.md), and
// `crawl index` builds the crawl's when it is wanted: one GET a file and one PUT.
package crawlindex

import (
	"context"
	"fmt"
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/layout"

	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
)

// Prefix is where crawl indexes are stored.
const Prefix = layout.Indexes

// Key is the key of crawl's index.
func Key(crawl string) string { return Prefix + crawl + warcfile.IndexSuffix }

// Store is the object store that holds the crawl's files (blob.Store).
type Store interface {
	List(ctx context.Context, prefix string) ([]string, error)
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, body []byte, contentType string) error
}

// Result is what Build did.
type Result struct {
	Key   string // where the index is
	Files int    // the WARC files indexed
	Lines int    // the index's lines: one a response record
	Index []byte // the index itself
}

// Build indexes every WARC file of the crawl and stores the index at Key(crawl). progress, if
// not nil, is told of each file indexed. A file that cannot be read or indexed fails the build,
// naming the file; nothing is stored then.
func Build(ctx context.Context, s Store, crawl string, progress func(done, total int)) (Result, error) {
	if crawl == "" || strings.ContainsAny(crawl, "/#") {
		return Result{}, fmt.Errorf("crawl id %q: want a crawl's id, as crawl status lists them", crawl)
	}
	prefix := layout.PagesDir(crawl)
	keys, err := s.List(ctx, prefix)
	if err != nil {
		return Result{}, fmt.Errorf("list the WARC files of %s: %w", crawl, err)
	}
	var files []string
	for _, k := range keys {
		if strings.HasSuffix(k, ".warc.gz") {
			files = append(files, k)
		}
	}
	if len(files) == 0 {
		return Result{}, fmt.Errorf("crawl %s has no WARC files under %s", crawl, prefix)
	}
	indexes := make([][]byte, 0, len(files))
	for i, k := range files {
		data, err := s.Get(ctx, k)
		if err != nil {
			return Result{}, fmt.Errorf("read %s: %w", k, err)
		}
		// The index names each file by its path under the crawl's prefix (2026/12/01/....warc.gz):
		// a replay tool's archive path is that prefix.
		ix, err := warcfile.IndexFile(strings.TrimPrefix(k, prefix), data)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", k, err)
		}
		indexes = append(indexes, ix)
		if progress != nil {
			progress(i+1, len(files))
		}
	}
	index := warcfile.MergeIndexes(indexes...)
	r := Result{Key: Key(crawl), Files: len(files), Lines: strings.Count(string(index), "\n"), Index: index}
	if err := s.Put(ctx, r.Key, index, warcfile.IndexContentType); err != nil {
		return Result{}, fmt.Errorf("store the index of %s: %w", crawl, err)
	}
	return r, nil
}
