package export

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/records"
)

// Follow writes crawl's records to w as JSON lines as they land, each page once, for a consumer
// that wants the pages as they come (crawl export --follow). It looks for new records files every
// every, flushing w after each look that found some, until ended says the crawl is over; then it
// looks once more, so that the records stored before the end are written too. Its context ends it
// early.
func Follow(ctx context.Context, s records.Store, crawl string, w io.Writer, o Options, every time.Duration,
	ended func(context.Context) (bool, error)) (Result, error) {
	f, err := records.NewFollower(s, crawl)
	if err != nil {
		return Result{}, err
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var res Result
	for {
		over, err := ended(ctx)
		if err != nil {
			return res, fmt.Errorf("whether crawl %s is over: %w", crawl, err)
		}
		n, err := f.Read(ctx, func(r records.Record) error {
			if !o.keeps(r) {
				return nil
			}
			res.Records++
			return enc.Encode(r)
		})
		res.Files += n
		if err != nil {
			return res, err
		}
		if err := bw.Flush(); err != nil {
			return res, err
		}
		if over {
			return res, nil
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		case <-t.C:
		}
	}
}
