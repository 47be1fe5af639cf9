package safelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestUntrustedStringsAreEscapedAndCut(t *testing.T) {
	hostile := "http://evil.test/\nlevel=ERROR msg=\"forged\" " + strings.Repeat("é", 2000)
	for _, tt := range []struct {
		name string
		h    func(*bytes.Buffer) slog.Handler
	}{
		{"text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
		{"json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := Wrap(slog.New(tt.h(&buf))).With("seed", hostile)
			log.Warn("fetch failed", "url", hostile, "err", errors.New(hostile), slog.Group("g", "inner", hostile))
			out := buf.String()
			if n := strings.Count(out, "\n"); n != 1 {
				t.Errorf("one record became %d lines:\n%s", n, out)
			}
			if len(out) > 5*MaxValueBytes+600 {
				t.Errorf("the line is %d bytes: values were not cut", len(out))
			}
			if strings.Count(out, "bytes)") != 4 {
				t.Errorf("want 4 truncated values, got:\n%s", out)
			}
			if tt.name == "json" {
				var m map[string]any
				if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
					t.Errorf("not valid JSON: %v", err)
				}
			}
		})
	}
}

func TestTruncateKeepsRunes(t *testing.T) {
	s := Truncate(strings.Repeat("日", 400))
	if !strings.HasSuffix(s, "…(1200 bytes)") || strings.ContainsRune(s, '\uFFFD') {
		t.Errorf("Truncate = %q", s[len(s)-30:])
	}
	if Truncate("short") != "short" {
		t.Error("a short string changed")
	}
}
