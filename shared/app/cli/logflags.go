package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/crawlstack/crawlstack/shared/observe/telemetry"
)

// LogFlags are --log-level and --log-format, for the commands that run handlers.
type LogFlags struct {
	Level  string
	Format string
}

// register adds the flags to fs, with level as the default level.
func (l *LogFlags) register(fs *flag.FlagSet, level string) {
	fs.StringVar(&l.Level, "log-level", level, "least level logged: debug, info, warn or error")
	fs.StringVar(&l.Format, "log-format", "text", "log lines as text or json (json lines carry trace_id and span_id, as on Lambda)")
}

// Logger returns the logger the flags ask for, writing to w, or an error that names the bad flag.
// Lines logged with a context that holds a span carry its trace_id and span_id.
func (l LogFlags) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", l.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(l.Format) {
	case "text":
		return slog.New(telemetry.LogHandler(slog.NewTextHandler(w, opts))), nil
	case "json":
		return slog.New(telemetry.LogHandler(slog.NewJSONHandler(w, opts))), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", l.Format)
}
