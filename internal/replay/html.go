package replay

import (
	"embed"
	"html/template"
	"io"
	"strings"
)

//go:embed templates/timeline.html.tmpl
var templates embed.FS

// timelineHTML is parsed on every call: a report is written once per run,
// and a package-level template would be global state.
func timelineHTML() (*template.Template, error) {
	return template.New("timeline.html.tmpl").Funcs(template.FuncMap{
		"join":      strings.Join,
		"shortTime": shortTime,
		"decisionClass": func(d string) string {
			switch d {
			case "allow", "deny", "ask":
				return d
			}
			return "other"
		},
	}).ParseFS(templates, "templates/timeline.html.tmpl")
}

// TimelineStats are the counts at the top of the HTML report.
type TimelineStats struct {
	Steps, Turns, Denies, Alerts, Violations, TaintedSteps int
}

// Stats counts a timeline's steps by what happened in them.
func (tl *Timeline) Stats() TimelineStats {
	// Turns as the session state counts them, not turnStart envelopes: a
	// denied or refused turnStart opens no turn.
	st := TimelineStats{Steps: len(tl.Steps), Turns: tl.Turns}
	for _, s := range tl.Steps {
		if s.Decision == "deny" {
			st.Denies++
		}
		st.Alerts += len(s.Alerts)
		st.Violations += len(s.Violations)
		if len(s.Tainted) > 0 {
			st.TaintedSteps++
		}
	}
	return st
}

// WriteHTML writes a timeline as one self-contained HTML file: no scripts,
// no external styles, fonts or images, so it can be attached to a ticket
// and opened anywhere.
func WriteHTML(w io.Writer, tl *Timeline) error {
	t, err := timelineHTML()
	if err != nil {
		return err
	}
	return t.Execute(w, tl)
}
