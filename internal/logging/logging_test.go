package logging_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/turnguard/turnguard/internal/logging"
)

func TestNew(t *testing.T) {
	var buf bytes.Buffer
	log, err := logging.New(&buf, "info", logging.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Msg("hidden")
	log.Info().Str("k", "v").Msg("shown")
	var line map[string]any
	// Not a terminal: auto means JSON, one object per line.
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("auto format on a buffer is not JSON: %q", buf.String())
	}
	ts, _ := line["time"].(string)
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || line["message"] != "shown" || line["k"] != "v" || line["level"] != "info" {
		t.Fatalf("log line %v (time: %v)", line, err)
	}
	buf.Reset()
	log, _ = logging.New(&buf, "debug", logging.FormatConsole)
	log.Debug().Msg("readable")
	if out := buf.String(); json.Valid(buf.Bytes()) || !strings.Contains(out, "readable") {
		t.Fatalf("console format wrote %q", out)
	}
	for _, bad := range [][2]string{{"loud", "json"}, {"", "json"}, {"info", "xml"}} {
		if _, err := logging.New(&buf, bad[0], bad[1]); err == nil {
			t.Errorf("level %q format %q accepted", bad[0], bad[1])
		}
	}
}
