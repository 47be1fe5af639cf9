// Package pdfgen writes PDFs for tests with codeberg.org/go-pdf/fpdf, a library other than the
// one the crawler reads them with (shared/crawl/web/pdftext): what a test wrote is the oracle of
// what the crawler read.
package pdfgen

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"codeberg.org/go-pdf/fpdf"
)

// Doc is what a generated PDF holds.
type Doc struct {
	Title, Author, Subject, Keywords, Creator string
	Created, Modified                         time.Time
	// Pages are the lines of text of each page.
	Pages [][]string
	// Links are URIs, one link annotation each, on the first page.
	Links []string
	// Uncompressed writes the content streams as they are, not deflated.
	Uncompressed bool
}

// Write is the PDF of d.
func Write(d Doc) ([]byte, error) {
	f := fpdf.New("P", "mm", "A4", "")
	f.SetCompression(!d.Uncompressed)
	f.SetTitle(d.Title, true)
	f.SetAuthor(d.Author, true)
	f.SetSubject(d.Subject, true)
	f.SetKeywords(d.Keywords, true)
	f.SetCreator(d.Creator, true)
	if !d.Created.IsZero() {
		f.SetCreationDate(d.Created)
	}
	if !d.Modified.IsZero() {
		f.SetModificationDate(d.Modified)
	}
	for i, lines := range d.Pages {
		f.AddPage()
		f.SetFont("Helvetica", "", 12)
		for _, l := range lines {
			f.CellFormat(0, 8, l, "", 1, "L", false, 0, "")
		}
		if i == 0 {
			for j, l := range d.Links {
				f.LinkString(10, 200+float64(j)*10, 50, 8, l)
			}
		}
	}
	var b bytes.Buffer
	if err := f.Output(&b); err != nil {
		return nil, fmt.Errorf("write the pdf: %w", err)
	}
	return b.Bytes(), nil
}

// Poison is good with bytes flipped so that the PDF reader the crawler uses panics on it: the
// first of a seeded sequence of mutations for which panics says so (it is given the mutated
// bytes). It fails when none of tries mutations does.
func Poison(good []byte, tries int, panics func([]byte) bool) ([]byte, error) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range tries {
		b := slices.Clone(good)
		for range 1 + rng.IntN(8) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		if panics(b) {
			return b, nil
		}
	}
	return nil, fmt.Errorf("none of %d mutations of the pdf makes the reader panic", tries)
}
