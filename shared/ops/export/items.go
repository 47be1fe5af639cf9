package export

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/crawlstack/crawlstack/shared/crawl/records"
)

// Item is a row of an items export: one item that a page yielded under the spec's item rule
// (records.Record.Items), with the page it came from.
type Item struct {
	Crawl string `json:"crawl"`
	URL   string `json:"url"`
	Rule  string `json:"item"`
	// Index is the item's place among the page's items of the rule, from 1, in document order.
	Index int            `json:"index"`
	Data  map[string]any `json:"data"`
}

// itemColumns are the CSV columns of an items export, before the item's fields.
var itemColumns = []string{"crawl", "url", "item", "index"}

// WriteItems writes the items of crawl's records that the rule yielded, one a row, to w in format
// f: each page's once (as Write reads them), in its order. A rule that yielded nothing writes no
// row (and, in CSV, the header alone).
func WriteItems(ctx context.Context, s records.Store, crawl, rule string, f Format, w io.Writer, progress records.Progress) (Result, error) {
	read := func(emit func(Item, map[string]any) error) (int, error) {
		return records.Read(ctx, s, crawl, progress, func(r records.Record) error {
			list, _ := r.Items[rule].([]any)
			for i, v := range list {
				data, ok := v.(map[string]any)
				if !ok {
					return fmt.Errorf("%s: item %d of %s is not an object", r.URL, i+1, rule)
				}
				if err := emit(Item{Crawl: r.Crawl, URL: r.URL, Rule: rule, Index: i + 1, Data: data}, data); err != nil {
					return err
				}
			}
			return nil
		})
	}
	switch f {
	case JSONL:
		return writeJSONL(func(each func(Item) error) (int, error) {
			return read(func(it Item, _ map[string]any) error { return each(it) })
		}, w)
	case CSV:
		return spoolCSV(w, itemColumns, read, func(it Item, fields []string) ([]string, error) {
			return dataCells([]string{it.Crawl, it.URL, it.Rule, strconv.Itoa(it.Index)}, it.Data, fields, it.URL)
		})
	}
	return Result{}, fmt.Errorf("format %q: want jsonl or csv", f)
}
