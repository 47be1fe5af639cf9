package cli

import (
	"context"
	"log/slog"
	"strings"
)

// interruptQuiet is a log handler that, once the run is interrupted (ctx cancelled), drops the
// records whose error is that cancellation: the batches the interrupt cut short are not failures
// (their messages come back to the next run), and one line says what was saved instead.
type interruptQuiet struct {
	slog.Handler
	ctx context.Context
}

// Handle drops a record of an interrupted batch, and passes every other one on.
func (h interruptQuiet) Handle(ctx context.Context, r slog.Record) error {
	if h.ctx.Err() != nil && cancelledRecord(r) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the filter on the derived handler.
func (h interruptQuiet) WithAttrs(as []slog.Attr) slog.Handler {
	return interruptQuiet{Handler: h.Handler.WithAttrs(as), ctx: h.ctx}
}

// WithGroup keeps the filter on the derived handler.
func (h interruptQuiet) WithGroup(name string) slog.Handler {
	return interruptQuiet{Handler: h.Handler.WithGroup(name), ctx: h.ctx}
}

// cancelledRecord is whether the record's error is a cancellation (the handlers log errors as
// strings, so the message is what is left to look at).
func cancelledRecord(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" && strings.Contains(a.Value.String(), context.Canceled.Error()) {
			found = true
			return false
		}
		return true
	})
	return found
}
