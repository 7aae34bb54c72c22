package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ANSI colours of a tail line on a terminal.
const (
	ansiReset   = "\x1b[0m"
	ansiBold    = "\x1b[1m"
	ansiDim     = "\x1b[2m"
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiMagenta = "\x1b[35m"
	ansiCyan    = "\x1b[36m"
	ansiAlarm   = "\x1b[1;97;41m" // bold white on red: cannot be missed
)

// FormatTailLine renders one event as a line for a person (without the
// newline): time, verdict, then for a decision tenant, session (its
// shortened), turn, hook and tool, decision, rules and reason;
// for an alert ALERT, severity, tenant, session, turn, rule, title and
// message. A message that is not verified says why at the end. color adds
// ANSI colours.
func FormatTailLine(e TailEvent, color bool) string {
	paint := func(code, s string) string {
		if !color || s == "" {
			return s
		}
		return code + s + ansiReset
	}
	var b strings.Builder
	b.WriteString(paint(ansiDim, e.Time.Format("15:04:05")))
	b.WriteString("  ")
	v := fmt.Sprintf("%-12s", e.Verdict)
	switch e.Verdict {
	case TailNotVerified:
		v = paint(ansiAlarm, v)
	case TailVerified:
		v = paint(ansiGreen, v)
	default:
		v = paint(ansiDim, v)
	}
	b.WriteString(v)
	b.WriteString("  ")
	turn := "turn " + orDash(shortID(e.TurnID))
	if e.TurnIndex > 0 {
		turn = "turn " + strconv.Itoa(e.TurnIndex)
	}
	if e.Kind == TailAlert {
		fmt.Fprintf(&b, "%s %s  %s/%s  %s  ", paint(ansiBold+ansiMagenta, "ALERT"), paint(severityColor(e.Severity), fmt.Sprintf("%-8s", orDash(e.Severity))),
			orDash(e.Tenant), orDash(shortID(e.SessionID)), turn)
		step := strings.TrimSpace(e.Hook + " " + e.Tool)
		if step != "" {
			b.WriteString(step + "  ")
		}
		b.WriteString(paint(ansiBold, orDash(strings.Join(e.Rules, ","))))
		if e.Title != "" {
			b.WriteString("  " + e.Title)
		}
		if e.Reason != "" {
			b.WriteString(": " + e.Reason)
		}
	} else {
		step := strings.TrimSpace(e.Hook + " " + e.Tool)
		fmt.Fprintf(&b, "%s  %s/%s  %s  %s", paint(decisionColor(e.Decision), fmt.Sprintf("%-6s", orDash(e.Decision))),
			orDash(e.Tenant), orDash(shortID(e.SessionID)), turn, orDash(step))
		if len(e.Rules) > 0 {
			b.WriteString("  " + paint(ansiBold, strings.Join(e.Rules, ",")))
		}
		reason := e.Reason
		if reason == "" && len(e.ReasonCodes) > 0 {
			reason = strings.Join(e.ReasonCodes, ",")
		}
		if reason != "" {
			b.WriteString("  " + reason)
		}
	}
	if e.Problem != "" {
		b.WriteString("  " + paint(ansiAlarm, "!! "+e.Problem))
	}
	return b.String()
}

// shortID shortens a UUID-like id to its first 8 and last 4 characters:
// random ids differ in the first, ids minted in sequence (the examples'
// request and turn ids) in the last; --json and --session take the whole.
func shortID(id string) string {
	if r := []rune(id); len(r) > 13 {
		return string(r[:8]) + "…" + string(r[len(r)-4:])
	}
	return id
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func decisionColor(d string) string {
	switch {
	case d == "allow":
		return ansiGreen
	case d == "deny":
		return ansiBold + ansiRed
	case strings.HasPrefix(d, "error"):
		return ansiMagenta
	}
	return ansiYellow // modify, ask
}

func severityColor(s string) string {
	switch strings.ToLower(s) {
	case "critical", "fatal", "high":
		return ansiBold + ansiRed
	case "medium":
		return ansiYellow
	}
	return ansiCyan
}

// WriteTailJSON writes one event as a line of JSON.
func WriteTailJSON(w io.Writer, e TailEvent) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
