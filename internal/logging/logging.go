// Package logging builds turnguard's zerolog loggers: structured JSON by
// default, human-readable console lines when writing to a terminal.
package logging

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// Formats accepted by New.
const (
	FormatAuto    = "auto"
	FormatJSON    = "json"
	FormatConsole = "console"
)

// New returns a logger writing to w at the given level ("trace" … "error")
// and format ("auto": console on a terminal, JSON otherwise).
func New(w io.Writer, level, format string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("log level %q: want trace, debug, info, warn or error", level)
	}
	switch format {
	case FormatAuto:
		if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			w = console(w)
		}
	case FormatConsole:
		w = console(w)
	case FormatJSON:
	default:
		return zerolog.Nop(), fmt.Errorf("log format %q: want auto, json or console", format)
	}
	return zerolog.New(w).Level(lvl).Hook(nanoTime{}), nil
}

// nanoTime stamps every event with an RFC 3339 time in nanoseconds, so log
// lines of one millisecond keep their order; it avoids changing zerolog's
// process-wide TimeFieldFormat.
type nanoTime struct{}

func (nanoTime) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format(time.RFC3339Nano))
}

func console(w io.Writer) io.Writer {
	return zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
}
