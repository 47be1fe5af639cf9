package seeds

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
)

type badLine struct {
	line  int
	class errclass.Class
}

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		seeds map[int]string // line -> normalised URL
		bad   []badLine
	}{
		{"empty", "", map[int]string{}, nil},
		{"one without newline", "http://example.com", map[int]string{1: "http://example.com/"}, nil},
		{
			name:  "comments blanks and whitespace",
			in:    "# seeds\n\n   \n  http://A.example/x  \n\t# indented comment\nhttps://b.example/\n",
			seeds: map[int]string{4: "http://a.example/x", 6: "https://b.example/"},
		},
		{
			name:  "bom and crlf",
			in:    "\xEF\xBB\xBFhttp://a.example/\r\nhttp://b.example/\r\n",
			seeds: map[int]string{1: "http://a.example/", 2: "http://b.example/"},
		},
		{
			name:  "bad lines do not stop the scan",
			in:    "not a url\nftp://a.example/\nhttp://ok.example/\nhttp://exa mple/\n",
			seeds: map[int]string{3: "http://ok.example/"},
			bad:   []badLine{{1, errclass.Parse}, {2, errclass.Scope}, {4, errclass.Parse}},
		},
		{
			name: "trailing comments",
			in:   "http://a.example/  # the home page\nhttp://b.example/x#top\nhttp://c.example/\t#tab\nhttp://d.example/#frag # note\n",
			seeds: map[int]string{1: "http://a.example/", 2: "http://b.example/x", 3: "http://c.example/",
				4: "http://d.example/"},
		},
		{
			name:  "over-long line",
			in:    "http://a.example/" + strings.Repeat("x", DefaultMaxLine) + "\nhttp://b.example/\n",
			seeds: map[int]string{2: "http://b.example/"},
			bad:   []badLine{{1, errclass.TooLarge}},
		},
		{
			name:  "line at the limit",
			in:    "http://a.example/?" + strings.Repeat("x", DefaultMaxLine-len("http://a.example/?")) + "\r\n",
			seeds: map[int]string{},
			bad:   []badLine{{1, errclass.TooLarge}}, // within the line limit, over urlnorm.MaxLength
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seeds, bad, err := Parse(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := map[int]string{}
			for _, s := range seeds {
				got[s.Line] = s.URL.String()
			}
			if len(got) != len(tt.seeds) {
				t.Errorf("seeds %v, want %v", got, tt.seeds)
			}
			for line, want := range tt.seeds {
				if got[line] != want {
					t.Errorf("line %d: seed %q, want %q", line, got[line], want)
				}
			}
			if len(bad) != len(tt.bad) {
				t.Fatalf("bad lines %v, want %v", bad, tt.bad)
			}
			for i, b := range bad {
				if b.Line != tt.bad[i].line || errclass.Of(b) != tt.bad[i].class {
					t.Errorf("bad line %d: %v (class %q), want line %d class %q", i, b, errclass.Of(b), tt.bad[i].line, tt.bad[i].class)
				}
				if len(b.Text) > maxText+3 {
					t.Errorf("bad line text is %d bytes, over %d", len(b.Text), maxText+3)
				}
			}
		})
	}
}

// A line with no scheme says how to write it; another scheme keeps its own reason.
func TestBadLineSaysHowToWriteIt(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"127.0.0.1:8081/p3.html", "no scheme: write https://127.0.0.1:8081/p3.html (or http://)"},
		{"localhost:8080/", "no scheme: write https://localhost:8080/ (or http://)"},
		{"example.com/a", "no scheme: write https://example.com/a (or http://)"},
		{"bob:pw@example.com:81/", "no scheme: write https://example.com:81/ (or http://)"},
		{"bad line 1", "not an absolute url"},
		{"mailto:someone@example.com", `scheme "mailto" is not crawled`},
		{"http://exa mple/", "invalid character"},
	} {
		_, bad, err := Parse(strings.NewReader(tt.in + "\n"))
		if err != nil || len(bad) != 1 {
			t.Fatalf("Parse(%q) = %v, %v; want one bad line", tt.in, bad, err)
		}
		if msg := bad[0].Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "pw@") {
			t.Errorf("Parse(%q): %s; want it to say %q, and no password", tt.in, msg, tt.want)
		}
	}
}

func TestBadLineHidesCredentials(t *testing.T) {
	_, bad, err := Parse(strings.NewReader("ftp://user:secret@example.com/\n"))
	if err != nil || len(bad) != 1 || strings.Contains(bad[0].Error(), "secret") {
		t.Errorf("Parse = %v, %v; want one bad line without the password", bad, err)
	}
}

func TestLineError(t *testing.T) {
	e := LineError{Line: 7, Text: "nope", Err: errclass.Errorf(errclass.Parse, "bad url")}
	if got, want := e.Error(), `line 7: "nope": parse: bad url`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if errclass.Of(e) != errclass.Parse {
		t.Errorf("class %q, want parse", errclass.Of(e))
	}
}

func TestScanStops(t *testing.T) {
	stop := errors.New("stop")
	tests := []struct {
		name  string
		r     io.Reader
		fn    func(Seed) error
		calls int
		want  error
	}{
		{"fn error ends the scan", strings.NewReader("http://a.example/\nhttp://b.example/\n"),
			func(Seed) error { return stop }, 1, stop},
		{"read error ends the scan", io.MultiReader(strings.NewReader("http://a.example/\n"), iotest.ErrReader(stop)),
			func(Seed) error { return nil }, 1, stop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := Scan(tt.r, 0, func(s Seed) error { calls++; return tt.fn(s) }, nil)
			if !errors.Is(err, tt.want) || calls != tt.calls {
				t.Errorf("Scan = %v after %d calls, want %v after %d", err, calls, tt.want, tt.calls)
			}
		})
	}
}

func TestScanMaxLine(t *testing.T) {
	var bad []LineError
	err := Scan(strings.NewReader("http://a.example/123456789\nhttp://b.example/\n"), 20,
		func(Seed) error { return nil }, func(e LineError) { bad = append(bad, e) })
	if err != nil || len(bad) != 1 || bad[0].Line != 1 || errclass.Of(bad[0]) != errclass.TooLarge {
		t.Errorf("Scan with maxLine 20 = %v, bad %v; want line 1 too large", err, bad)
	}
}
