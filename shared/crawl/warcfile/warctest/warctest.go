// Package warctest checks WARC files and their CDXJ indexes with an independent reader: warcio.js
// (the npm package warcio, pinned in package.json here), run by node. `make warcio-deps` installs
// it into .cache/warcio, and `make test` does so first. A test that calls Check fails, never skips,
// when node or warcio.js is missing.
package warctest

import (
	_ "embed"
	"encoding/json"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/nodetest"
)

//go:embed check.cjs
var script []byte

// Summary is what the reader saw: record counts by WARC-Type among them.
type Summary struct {
	Files     int `json:"files"`
	Records   int `json:"records"`
	Warcinfo  int `json:"warcinfo"`
	Responses int `json:"response"`
	Requests  int `json:"request"`
	Revisits  int `json:"revisit"`
	// Conversions are conversion records (a rendered page's DOM, warcfile.EncodeConversion).
	Conversions int `json:"conversion"`
	IndexLines  int `json:"indexLines"`
	Resolved    int `json:"resolved"` // index lines whose offset and length read back their record
	// RevisitsResolved counts the revisit records whose earlier record was among the files read,
	// with the payload digest the revisit gives.
	RevisitsResolved int `json:"revisitsResolved"`
	// ConversionsResolved counts the conversion records whose WARC-Refers-To names a response
	// record of the same URI among the files read.
	ConversionsResolved int `json:"conversionsResolved"`
}

// Check reads each WARC file (a .warc.gz with its index beside it, the file's name plus ".cdxj")
// with warcio.js. It fails t with every problem found: a block or payload digest that is not the
// SHA-256 of what the record holds, a file that does not open with its warcinfo record, a request
// record away from its response, or an index line that is out of order, disagrees with warcio's
// own CDXJ indexer or does not read back its record.
func Check(t testing.TB, files ...string) Summary {
	t.Helper()
	if len(files) == 0 {
		t.Fatal("warctest.Check: no WARC files to check")
	}
	out, stderr, runErr := warcio.Run(t, script, files...)
	var res struct {
		Summary  Summary  `json:"summary"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("warcio.js check: %v (%v)\nstdout: %s\nstderr: %s", runErr, err, out, stderr)
	}
	for _, p := range res.Problems {
		t.Errorf("warcio.js: %s", p)
	}
	if runErr != nil && len(res.Problems) == 0 {
		t.Fatalf("warcio.js check: %v\nstderr: %s", runErr, stderr)
	}
	return res.Summary
}

// warcio is warcio.js, installed by make warcio-deps into .cache/warcio.
var warcio = nodetest.Reader{Package: "warcio", Cache: "warcio", Make: "warcio-deps",
	DirVar: "CRAWL_WARCIO_DIR", ScriptVar: "WARCIO_DIR"}

//go:embed list.cjs
var listScript []byte

// Record is what warcio.js read of one record.
type Record struct {
	Type          string `json:"type"`
	URI           string `json:"uri"`
	PayloadDigest string `json:"payloadDigest"`
	// BlockDigestOK: the record's WARC-Block-Digest is the SHA-256 of its block.
	BlockDigestOK bool `json:"blockDigestOK"`
}

// Read has warcio.js read each file and returns the records it holds, by the file's path. A file
// need not be a whole WARC file: the bytes a stored offset and length name are a file of one
// record. A file warcio.js cannot read fails t.
func Read(t testing.TB, files ...string) map[string][]Record {
	t.Helper()
	out, stderr, runErr := warcio.Run(t, listScript, files...)
	var res map[string]struct {
		Records []Record `json:"records"`
		Error   string   `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil || runErr != nil {
		t.Fatalf("warcio.js list: %v (%v)\nstdout: %s\nstderr: %s", runErr, err, out, stderr)
	}
	recs := make(map[string][]Record, len(res))
	for f, r := range res {
		if r.Error != "" {
			t.Errorf("warcio.js cannot read %s: %s", f, r.Error)
		}
		recs[f] = r.Records
	}
	return recs
}
