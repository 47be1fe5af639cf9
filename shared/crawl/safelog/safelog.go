// Package safelog keeps untrusted strings (URLs, seed lines, server-provided error text) from
// flooding or forging log lines: it wraps a slog.Handler and cuts every string attribute to a
// bounded length. Escaping is the wrapped handler's job: slog's JSON and text handlers quote
// strings, so a newline in a URL can never start a fake log line.
package safelog

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"
)

// MaxValueBytes is the longest string value a log line keeps.
const MaxValueBytes = 512

// Handler truncates string attributes before passing records on.
type Handler struct {
	next slog.Handler
}

// New wraps next.
func New(next slog.Handler) *Handler { return &Handler{next: next} }

// Wrap returns a logger whose string attributes are truncated.
func Wrap(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(*Handler); ok {
		return l
	}
	return slog.New(New(l.Handler()))
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle truncates the record's message and attributes and passes it on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Truncate(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(clean(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs truncates attributes bound to the logger.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	cleaned := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		cleaned[i] = clean(a)
	}
	return &Handler{next: h.next.WithAttrs(cleaned)}
}

// WithGroup opens a group on the wrapped handler.
func (h *Handler) WithGroup(name string) slog.Handler { return &Handler{next: h.next.WithGroup(name)} }

func clean(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Truncate(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, sub := range g {
			out[i] = clean(sub)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, Truncate(err.Error()))
		}
		if s, ok := v.Any().(fmt.Stringer); ok {
			return slog.String(a.Key, Truncate(s.String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// Truncate cuts s to MaxValueBytes at a rune boundary and says how long it was. Besides log
// lines, it bounds the untrusted error text kept in the table and in parse records.
func Truncate(s string) string {
	if len(s) <= MaxValueBytes {
		return s
	}
	n := MaxValueBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:n], len(s))
}
