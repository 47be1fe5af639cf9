// Package export writes a crawl's records into one local file, for `crawl export`: JSON lines
// (one record a line, as parse stored them) or CSV (one row a page, a column per field and one
// per extracted field). Each page appears once, even where a redelivered parse message stored
// its record twice.
package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/records"
)

// Format is a file format of the export.
type Format string

// The formats.
const (
	JSONL Format = "jsonl"
	CSV   Format = "csv"
)

// ParseFormat reads a --format value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case JSONL, CSV:
		return f, nil
	}
	return "", fmt.Errorf("format %q: want jsonl or csv", s)
}

// FormatOf is the format a file's name asks for: CSV for .csv, JSON lines otherwise.
func FormatOf(path string) Format {
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return CSV
	}
	return JSONL
}

// Result is what an export wrote.
type Result struct {
	Files   int // the records files read
	Records int // the records written: one a page
}

// Options are what an export leaves in or out.
type Options struct {
	// Meta keeps the meta records: those of the sitemaps and robots.txt files a crawl read for its
	// links (records.Record.Sitemap), which are no pages of the site. Left out by default.
	Meta bool
}

// keeps says whether an export with o writes r.
func (o Options) keeps(r records.Record) bool { return !r.Sitemap || o.Meta }

// Write writes crawl's records from s to w in format f. progress, if not nil, is told of each
// records file read. A CSV export holds the records in a temporary file while it learns the
// columns of their data, then writes them; nothing is written to w before the last file is read.
func Write(ctx context.Context, s records.Store, crawl string, f Format, w io.Writer, progress records.Progress, o Options) (Result, error) {
	read := func(each func(records.Record) error) (int, error) {
		return records.Read(ctx, s, crawl, progress, func(r records.Record) error {
			if !o.keeps(r) {
				return nil
			}
			return each(r)
		})
	}
	switch f {
	case JSONL:
		return writeJSONL(read, w)
	case CSV:
		return writeCSV(read, w)
	}
	return Result{}, fmt.Errorf("format %q: want jsonl or csv", f)
}

// writeJSONL writes the rows that read gives, one JSON document a line.
func writeJSONL[T any](read func(func(T) error) (int, error), w io.Writer) (Result, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	var res Result
	files, err := read(func(r T) error {
		res.Records++
		return enc.Encode(r)
	})
	res.Files = files
	if err != nil {
		return res, err
	}
	return res, bw.Flush()
}

// fixedColumns are the CSV columns of every export, before the data fields.
var fixedColumns = []string{"crawl", "url", "finalUrl", "status", "depth", "contentType", "title", "canonical",
	"charset", "noindex", "nofollow", "fetchedAt", "class", "error", "sitemap", "outLinks",
	"warcKey", "warcOffset", "warcLength", "digest", "etag", "lastModified", "dataErrors", "unchanged", "rendered", "renderError"}

// DataColumn is the CSV column of the extracted field name.
func DataColumn(name string) string { return "data." + name }

func writeCSV(read func(func(records.Record) error) (int, error), w io.Writer) (Result, error) {
	return spoolCSV(w, fixedColumns, func(emit func(records.Record, map[string]any) error) (int, error) {
		return read(func(r records.Record) error { return emit(r, r.Data) })
	}, csvRow)
}

// spoolCSV writes as CSV the rows that read emits, each with its data: the fixed columns, then a
// column per field of data that any row has, sorted (DataColumn). It holds the rows in a
// temporary file while it learns those fields; nothing is written to w before read returns.
func spoolCSV[T any](w io.Writer, fixed []string, read func(emit func(T, map[string]any) error) (int, error),
	row func(T, []string) ([]string, error)) (Result, error) {
	spool, err := os.CreateTemp("", "crawl-export-*.jsonl")
	if err != nil {
		return Result{}, fmt.Errorf("a temporary file for the rows: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	var res Result
	fields := map[string]bool{}
	sw := bufio.NewWriter(spool)
	enc := json.NewEncoder(sw)
	enc.SetEscapeHTML(false)
	res.Files, err = read(func(r T, data map[string]any) error {
		res.Records++
		for k := range data {
			fields[k] = true
		}
		return enc.Encode(r)
	})
	if err != nil {
		return res, err
	}
	if err := sw.Flush(); err != nil {
		return res, fmt.Errorf("spool the rows: %w", err)
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return res, fmt.Errorf("spool the rows: %w", err)
	}
	names := slices.Sorted(maps.Keys(fields))
	header := slices.Clone(fixed)
	for _, n := range names {
		header = append(header, DataColumn(n))
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return res, err
	}
	dec := json.NewDecoder(bufio.NewReader(spool))
	dec.UseNumber()
	for {
		var r T
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			return res, fmt.Errorf("read the spooled rows: %w", err)
		}
		cells, err := row(r, names)
		if err != nil {
			return res, err
		}
		if err := cw.Write(cells); err != nil {
			return res, err
		}
	}
	cw.Flush()
	return res, cw.Error()
}

// csvRow is r's row: text as it is, booleans as true or false, lists, objects and numbers of
// data as JSON, and an empty cell for a field that is absent or null.
func csvRow(r records.Record, fields []string) ([]string, error) {
	outLinks := r.OutLinks
	if outLinks == nil {
		outLinks = []string{}
	}
	links, err := jsonText(outLinks)
	if err != nil {
		return nil, err
	}
	var dataErrors string
	if len(r.DataErrors) > 0 {
		if dataErrors, err = jsonText(r.DataErrors); err != nil {
			return nil, err
		}
	}
	var fetchedAt string
	if !r.FetchedAt.IsZero() {
		fetchedAt = r.FetchedAt.UTC().Format(time.RFC3339Nano)
	}
	row := []string{r.Crawl, r.URL, r.FinalURL, strconv.Itoa(r.Status), strconv.Itoa(r.Depth), r.ContentType, r.Title,
		r.Canonical, r.Charset, strconv.FormatBool(r.NoIndex), strconv.FormatBool(r.NoFollow), fetchedAt,
		string(r.Class), r.Error, strconv.FormatBool(r.Sitemap), links,
		r.WARC.Key, strconv.FormatInt(r.WARC.Offset, 10), strconv.FormatInt(r.WARC.Length, 10), r.Digest, r.ETag,
		r.LastModified, dataErrors, strconv.FormatBool(r.Unchanged), strconv.FormatBool(r.Rendered), r.RenderError}
	return dataCells(row, r.Data, fields, r.URL)
}

// dataCells is row with a cell for each of fields of data, for the page at url.
func dataCells(row []string, data map[string]any, fields []string, url string) ([]string, error) {
	for _, f := range fields {
		cell, err := dataCell(data[f])
		if err != nil {
			return nil, fmt.Errorf("%s: field %s: %w", url, f, err)
		}
		row = append(row, cell)
	}
	return row, nil
}

func dataCell(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return jsonText(v)
}

func jsonText(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
