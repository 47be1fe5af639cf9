package fileblob

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkPut writes 40 KB objects from parallel goroutines into one directory, as the fetch
// and parse stages write their batch files.
func BenchmarkPut(b *testing.B) {
	s, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 40<<10)
	var n atomic.Int64
	b.SetParallelism(4)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Put(context.Background(), fmt.Sprintf("pages/c/2026/11/29/%d.warc.gz", n.Add(1)), body, ""); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
