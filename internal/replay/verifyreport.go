package replay

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteVerification prints a verification for a terminal.
func WriteVerification(w io.Writer, v *Verification) error {
	if v.Sweep != nil {
		return writeSweep(w, v)
	}
	if v.SessionID == "" {
		return writeMessages(w, v)
	}
	fmt.Fprintf(w, "session %s  tenant %s\n", v.SessionID, v.Tenant)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tSTEP\tREQUEST ID\tDECISION\tREQUEST\tCHAIN\tSIGNATURE\tRECEIPT")
	for _, c := range v.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Seq, c.Hook, c.RequestID, c.Decision, c.Request, c.Chain, c.Signature, c.Receipt)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if v.Chain.Intact {
		// Refusals and pings are answered but not chained, so a session
		// can have more envelopes than chain entries: say both.
		fmt.Fprintf(w, "chain      intact: %s of %s recomputed, every recorded chain_hash matches%s\n",
			plural(v.Chain.Entries, "chain entry", "chain entries"), plural(len(v.Steps), "envelope", "envelopes"), unchainedNote(len(v.Steps)-v.Chain.Entries))
	} else {
		fmt.Fprintf(w, "chain      BROKEN at seq %d: %s\n", v.Chain.BreakSeq, v.Chain.BreakDetail)
	}
	return writeMessages(w, v)
}

// unchainedNote explains envelopes without a chain entry, when there are.
func unchainedNote(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%s without a chain entry: refusals and pings are not chained, nor steps without a recorded decision)", plural(n, "envelope", "envelopes"))
}

// writeClean prints the result line of a verification that found nothing
// wrong and reports whether it did; a verification with problems is left
// to its caller's report. Without the keys nobody can tell a forged
// decision from a real one, and with nothing in scope nothing was shown:
// neither is ever called verified.
func writeClean(w io.Writer, v *Verification) bool {
	m := v.Messages
	var done, skipped []string
	if v.Chain.Entries > 0 {
		done = append(done, plural(v.Chain.Entries, "chain entry", "chain entries"))
	}
	if n := m.DecisionsChecked + m.AlertsChecked; n > 0 {
		done = append(done, plural(n, "receipt", "receipts"))
	}
	if m.SignaturesChecked > 0 {
		done = append(done, plural(m.SignaturesChecked, "signature", "signatures"))
	}
	if n := m.DecisionsNotChecked + m.AlertsNotChecked; n > 0 {
		skipped = append(skipped, plural(n, "receipt", "receipts")+" (no --receipt-key)")
	}
	if m.SignaturesNotChecked > 0 {
		skipped = append(skipped, plural(m.SignaturesNotChecked, "signature", "signatures")+" (no --keys)")
	}
	switch v.Result() {
	case ResultVerified:
		fmt.Fprintf(w, "result     verified: %s checked, all sound\n", strings.Join(done, ", "))
	case ResultNothingChecked:
		fmt.Fprintln(w, "result     nothing checked: no decision, alert or chain entry in scope (is --tenant, --session or the range right?): not verified")
	case ResultNotChecked:
		fmt.Fprintf(w, "result     not checked: %s: not verified\n", strings.Join(skipped, ", "))
	case ResultPartlyChecked:
		fmt.Fprintf(w, "result     partly checked: %s sound; not checked: %s: not verified\n", strings.Join(done, ", "), strings.Join(skipped, ", "))
	default:
		return false
	}
	return true
}

// plural is n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// writeMessages prints the counts, the result line and the problems.
func writeMessages(w io.Writer, v *Verification) error {
	m := v.Messages
	fmt.Fprintf(w, "messages   %d on the decision subject: %d checked, %d not checked; %s: %d checked, %d not checked\n",
		m.Decisions, m.DecisionsChecked, m.DecisionsNotChecked, plural(m.Alerts, "alert", "alerts"), m.AlertsChecked, m.AlertsNotChecked)
	if m.SignaturesChecked+m.SignaturesNotChecked > 0 {
		fmt.Fprintf(w, "signatures %d checked, %d not checked\n", m.SignaturesChecked, m.SignaturesNotChecked)
	}
	if writeClean(w, v) {
		return nil
	}
	fmt.Fprintf(w, "result     %s\n", plural(len(v.Problems), "problem", "problems"))
	for _, p := range v.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	return nil
}

// writeSweep prints a whole-stream audit: the counts, the result line and
// the rejected messages as a table.
func writeSweep(w io.Writer, v *Verification) error {
	s, m := v.Sweep, v.Messages
	scope := "tenant " + s.Tenant
	if s.Tenant == "*" {
		scope = "all tenants"
	}
	if !s.From.IsZero() || !s.To.IsZero() {
		scope += fmt.Sprintf(", stored %s to %s", timeOrOpen(s.From), timeOrOpen(s.To))
	}
	fmt.Fprintf(w, "sweep      %s\n", scope)
	fmt.Fprintf(w, "decisions  %d: %d checked, %d not checked\n", m.Decisions, m.DecisionsChecked, m.DecisionsNotChecked)
	fmt.Fprintf(w, "alerts     %d: %d checked, %d not checked\n", m.Alerts, m.AlertsChecked, m.AlertsNotChecked)
	fmt.Fprintf(w, "rejected   %d\n", v.RejectedCount())
	if writeClean(w, v) {
		return nil
	}
	fmt.Fprintf(w, "result     %s rejected\n\n", plural(v.RejectedCount(), "message", "messages"))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tSEQ\tSUBJECT\tCLAIMED SEQ\tREQUEST/RULE\tWHY")
	for _, r := range v.Rejected {
		claimed := "-"
		if r.ClaimedSeq != 0 {
			claimed = fmt.Sprint(r.ClaimedSeq)
		}
		id := r.RequestID
		if id == "" {
			id = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Stream, r.StreamSeq, headerText(r.Subject), claimed, id, r.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := v.Sweep.RejectedUnlisted; n > 0 {
		fmt.Fprintf(w, "… and %d more, not listed (--max-rejected %d)\n", n, len(v.Rejected))
	}
	return nil
}

func timeOrOpen(t time.Time) string {
	if t.IsZero() {
		return "…"
	}
	return t.UTC().Format(time.RFC3339)
}
