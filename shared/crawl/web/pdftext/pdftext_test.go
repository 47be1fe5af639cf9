package pdftext

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/testkit/pdfgen"
)

var base, _ = url.Parse("https://docs.example/reports/q3.pdf")

func write(t *testing.T, d pdfgen.Doc) []byte {
	t.Helper()
	b, err := pdfgen.Write(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sample() pdfgen.Doc {
	return pdfgen.Doc{
		Title: "Quarterly report", Author: "Ada Lovelace", Subject: "Kettles sold", Keywords: "kettles, q3",
		Creator:  "pdfgen",
		Created:  time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		Modified: time.Date(2026, 4, 5, 6, 7, 8, 0, time.FixedZone("", 2*3600)),
		Pages:    [][]string{{"First page, line one", "Second line of page one"}, {"Page two says hello"}, {"The end"}},
		Links:    []string{"https://shop.example/p/1", "/p/2", "mailto:sales@shop.example"},
	}
}

// What fpdf wrote (another library) is what Extract reads: the metadata, the dates, the page
// count, each page's lines in order, and the http(s) links resolved against the PDF's URL.
func TestTextAndMetadataAreWhatWasWritten(t *testing.T) {
	for _, compressed := range []bool{true, false} {
		d := sample()
		d.Uncompressed = !compressed
		got, err := Extract(context.Background(), write(t, d), base, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Title != d.Title || got.Author != d.Author || got.Subject != d.Subject || got.Keywords != d.Keywords || got.Creator != d.Creator {
			t.Errorf("metadata %+v, want %+v", got, d)
		}
		if want := d.Created.Format(time.RFC3339); got.Created != want {
			t.Errorf("created %q, want %q", got.Created, want)
		}
		// fpdf writes the wall clock with no offset, which reads as UTC.
		if want := "2026-04-05T06:07:08Z"; got.Modified != want {
			t.Errorf("modified %q, want %q", got.Modified, want)
		}
		if got.Pages != 3 || got.Truncated {
			t.Errorf("pages %d, truncated %v; want 3, false", got.Pages, got.Truncated)
		}
		var lines []string
		for _, l := range strings.Split(got.Text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		if want := slices.Concat(d.Pages...); !slices.Equal(lines, want) {
			t.Errorf("compressed %v: text lines %q, want %q", compressed, lines, want)
		}
		if want := []string{"https://shop.example/p/1", "https://docs.example/p/2"}; !slices.Equal(got.Links, want) {
			t.Errorf("links %q, want %q", got.Links, want)
		}
	}
}

// The text stops at its cap, mid-page, on a UTF-8 boundary, and says it was cut; so does a
// PDF with more pages than are read.
func TestTextIsCapped(t *testing.T) {
	d := pdfgen.Doc{Title: "long"}
	for p := range 5 {
		var lines []string
		for l := range 20 {
			lines = append(lines, fmt.Sprintf("page %d line %d of a long document", p, l))
		}
		d.Pages = append(d.Pages, lines)
	}
	body := write(t, d)
	full, err := Extract(context.Background(), body, base, Limits{})
	if err != nil || full.Truncated {
		t.Fatalf("uncapped: %v, truncated %v", err, full.Truncated)
	}
	got, err := Extract(context.Background(), body, base, Limits{MaxTextBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || len(got.Text) > 1000 || len(got.Text) < 900 || !strings.HasPrefix(full.Text, got.Text) {
		t.Errorf("capped at 1000: truncated %v, %d bytes, prefix of the whole %v", got.Truncated, len(got.Text), strings.HasPrefix(full.Text, got.Text))
	}
	two, err := Extract(context.Background(), body, base, Limits{MaxPages: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !two.Truncated || two.Pages != 5 || strings.Contains(two.Text, "page 2 line") || !strings.Contains(two.Text, "page 1 line 19") {
		t.Errorf("2 of 5 pages read: truncated %v, pages %d, text has page 2: %v", two.Truncated, two.Pages, strings.Contains(two.Text, "page 2 line"))
	}
}

// A PDF over the size cap is refused unread; one past its time limit fails at its next read.
func TestSizeAndTimeBounds(t *testing.T) {
	body := write(t, sample())
	if _, err := Extract(context.Background(), body, base, Limits{MaxBytes: len(body) - 1}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the size cap: %v, want ErrTooLarge", err)
	}
	_, err := Extract(context.Background(), body, base, Limits{Timeout: time.Nanosecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "time limit") {
		t.Errorf("past the time limit: %v, want a deadline error", err)
	}
}

// Hostile and broken PDFs give errors, never a panic: not a PDF, a cut file, and thousands of
// files with bytes flipped at random (seeded), some of which panic inside the library.
func TestBrokenPDFsAreErrors(t *testing.T) {
	d := sample()
	d.Uncompressed = true
	body := write(t, d)
	for name, b := range map[string][]byte{"html": []byte("<html>not a pdf</html>"), "empty": nil,
		"cut": body[:len(body)/2], "header only": []byte("%PDF-1.4\n%%EOF\n")} {
		if _, err := Extract(context.Background(), b, base, Limits{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	panics := 0
	for range 3000 {
		b := slices.Clone(body)
		for range 1 + rng.IntN(8) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		if _, err := Extract(context.Background(), b, base, Limits{Timeout: 5 * time.Second}); err != nil && strings.Contains(err.Error(), "the pdf reader failed") {
			panics++
		}
	}
	if panics == 0 {
		t.Errorf("no mutated PDF made the library panic: the recovery is not proven")
	}
	t.Logf("%d of 3000 mutated PDFs panicked in the library, each recovered into an error", panics)
}

// PDF dates, with every part after the year optional and an offset as HH'mm', read as RFC 3339;
// what is not one stays as written.
func TestDates(t *testing.T) {
	for in, want := range map[string]string{
		"D:20260304050607Z":       "2026-03-04T05:06:07Z",
		"D:20260304050607+02'00'": "2026-03-04T05:06:07+02:00",
		"D:20260304050607-05'30":  "2026-03-04T05:06:07-05:30",
		"D:20260304":              "2026-03-04T00:00:00Z",
		"20260304050607":          "2026-03-04T05:06:07Z",
		"last Tuesday":            "last Tuesday",
		"":                        "",
	} {
		if got := date(in); got != want {
			t.Errorf("date(%q) = %q, want %q", in, got, want)
		}
	}
}

// Once the time is up every read of the file fails, so the reader stops wherever it is rather
// than run on after Extract has given up on it.
func TestReadsFailOnceTheTimeIsUp(t *testing.T) {
	body := write(t, sample())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%v", p)
			}
		}()
		_, err = read(&deadlineReader{ctx: ctx, r: bytes.NewReader(body)}, int64(len(body)), base, Limits{}.orDefaults())
		return err
	}()
	if err == nil {
		t.Error("a read past the time limit succeeded")
	}
}
