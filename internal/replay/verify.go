package replay

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/turnguard/turnguard/internal/acs"
	"github.com/turnguard/turnguard/internal/guardian"
	"github.com/turnguard/turnguard/internal/receipt"
)

// Check outcomes of one step in a verification.
const (
	CheckOK         = "ok"
	CheckFailed     = "FAILED"
	CheckNotChecked = "not checked"
	CheckNone       = "-"
)

// Verification is the offline integrity check of one session: its hash
// chain recomputed from the recorded envelopes, and every recorded
// decision's HMAC signature and Ed25519 receipt.
type Verification struct {
	Tenant    string       `json:"tenant"`
	SessionID string       `json:"session_id"`
	Steps     []StepCheck  `json:"steps"`
	Chain     ChainVerdict `json:"chain"`
	// Problems lists every failed check, in stream order.
	Problems []string `json:"problems"`
}

// ChainVerdict says whether the chain holds and, if not, where it breaks.
type ChainVerdict struct {
	Entries int  `json:"entries"`
	Intact  bool `json:"intact"`
	// BreakSeq is the stream sequence of the first step whose recorded
	// chain_hash differs from the recomputed one; BreakDetail says why.
	BreakSeq    uint64 `json:"break_seq,omitempty"`
	BreakDetail string `json:"break_detail,omitempty"`
}

// StepCheck is the verification of one envelope and its decision.
type StepCheck struct {
	Seq       uint64 `json:"seq"`
	Hook      string `json:"hook"`
	RequestID string `json:"request_id,omitempty"`
	// Decision is the recorded decision ("none" when none was recorded).
	Decision string `json:"decision"`
	// Request is ok when the recorded decision answers the envelope stored
	// at this sequence.
	Request   string `json:"request"`
	Chain     string `json:"chain"`
	Signature string `json:"signature"`
	Receipt   string `json:"receipt"`
	Detail    string `json:"detail,omitempty"`
}

// OK reports whether nothing failed.
func (v *Verification) OK() bool { return len(v.Problems) == 0 }

// Verify checks one session offline. g must decide with the intake
// settings the processor had (signature keys, required signatures, skew
// window, size limit) so that it refuses, and leaves off the chain, what
// the processor did; rules do not enter the chain, so none are used.
// keys checks HMAC signatures (nil: not checked); receiptKey checks
// receipts (nil: not checked).
func Verify(ctx context.Context, src *Source, g *guardian.Guardian, keys *acs.Keyring, receiptKey ed25519.PublicKey, r Range, tenant, sessionID string) (*Verification, error) {
	rec, err := src.ReadRecorded(ctx, tenant, sessionID, time.Time{}, DecodeBodies)
	if err != nil {
		return nil, err
	}
	v := &Verification{Tenant: tenant, SessionID: sessionID, Chain: ChainVerdict{Intact: true}}
	eng := NewEngine(g, nil)
	err = src.Each(ctx, Range{From: 1, To: r.To, ToTime: r.ToTime}, []string{acs.StoredFilter(tenant, sessionID, "*")}, func(e Envelope) error {
		out := eng.Decide(e)
		c := StepCheck{Seq: e.Seq, Hook: e.Route.Hook, RequestID: out.RequestID, Request: CheckNone, Chain: CheckNone, Signature: CheckNone, Receipt: CheckNone}
		var problems []string
		fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
		d, ok := rec.Decisions[e.Seq]
		if !ok {
			c.Decision = "none"
			if out.Response != nil {
				fail("no decision was recorded for it")
			}
		} else if d.ParseErr != nil {
			c.Decision, c.Request, c.Chain, c.Signature = d.Kind(), CheckFailed, CheckFailed, CheckFailed
			fail("%v", d.ParseErr)
			c.Receipt = checkReceipt(receiptKey, d, fail)
		} else {
			c.Decision = d.Kind()
			c.Request = checkRequest(out, d, fail)
			c.Chain = v.checkChain(e, out, d, fail)
			c.Signature = checkSignature(keys, sessionID, d, fail)
			c.Receipt = checkReceipt(receiptKey, d, fail)
		}
		c.Detail = strings.Join(problems, "; ")
		for _, p := range problems {
			v.Problems = append(v.Problems, fmt.Sprintf("seq %d (%s %s): %s", e.Seq, c.Hook, c.RequestID, p))
		}
		v.Steps = append(v.Steps, c)
		return nil
	})
	return v, err
}

// checkRequest compares the request the recorded decision answers with the
// envelope stored at its sequence: a mismatch means steps were reordered,
// replaced or removed.
func checkRequest(out guardian.Outcome, d Decision, fail func(string, ...any)) string {
	want := out.RequestID
	var got string
	if d.Response.Result != nil {
		got = d.Response.Result.RequestID
	}
	sameID := out.Response != nil && bytes.Equal(compactJSON(out.Response.ID), compactJSON(d.Response.ID))
	switch {
	case got != "" && want != "" && got != want:
		fail("the recorded decision answers request %s, but the envelope stored here is request %s (steps reordered or replaced)", got, want)
		return CheckFailed
	case out.Response != nil && !sameID:
		fail("the recorded decision answers JSON-RPC id %s, the envelope stored here has id %s", d.Response.ID, out.Response.ID)
		return CheckFailed
	}
	return CheckOK
}

// checkChain compares the recorded chain_hash with the recomputed one. The
// first mismatch is the break and the only one reported as a problem:
// every hash after a break differs too.
func (v *Verification) checkChain(e Envelope, out guardian.Outcome, d Decision, fail func(string, ...any)) string {
	recorded, recomputed := chainHashOf(&d.Response), chainHashOf(out.Response)
	if recorded == "" && recomputed == "" {
		return CheckNone
	}
	v.Chain.Entries++
	if recorded == recomputed {
		return CheckOK
	}
	if v.Chain.Intact {
		v.Chain.Intact, v.Chain.BreakSeq = false, e.Seq
		v.Chain.BreakDetail = fmt.Sprintf("recorded chain_hash %s, recomputed %s: the envelope stored at seq %d is not the one decided there, or an earlier one was removed, added or moved",
			short(recorded), short(recomputed), e.Seq)
		fail("the hash chain breaks here: %s", v.Chain.BreakDetail)
	}
	return CheckFailed
}

// checkSignature verifies the HMAC signature ACS puts in the response.
func checkSignature(keys *acs.Keyring, sessionID string, d Decision, fail func(string, ...any)) string {
	sig := d.Response.Sig()
	if keys == nil {
		if sig == nil {
			return CheckNone
		}
		return CheckNotChecked
	}
	if sig == nil {
		fail("the decision is not signed")
		return CheckFailed
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(d.Data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		fail("the decision is not JSON: %v", err)
		return CheckFailed
	}
	input, err := acs.SigningInput(doc)
	if err == nil {
		err = keys.Verify(sig, sessionID, input)
	}
	if err != nil {
		fail("HMAC signature: %v", err)
		return CheckFailed
	}
	return CheckOK
}

// checkReceipt verifies the Ed25519 receipt in the decision's header.
func checkReceipt(pub ed25519.PublicKey, d Decision, fail func(string, ...any)) string {
	if d.Receipt == "" {
		if pub != nil {
			fail("the decision carries no receipt")
			return CheckFailed
		}
		return CheckNone
	}
	if pub == nil {
		return CheckNotChecked
	}
	if id := receipt.KeyID(pub); d.ReceiptKey != "" && d.ReceiptKey != id {
		fail("receipt made with key %s, verifying with key %s", d.ReceiptKey, id)
		return CheckFailed
	}
	if err := receipt.Verify(pub, d.Data, d.Receipt); err != nil {
		fail("receipt: %v", err)
		return CheckFailed
	}
	return CheckOK
}

func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func short(h string) string {
	if h == "" {
		return "(none)"
	}
	return truncate(h, 20)
}

// WriteVerification prints a verification for a terminal.
func WriteVerification(w io.Writer, v *Verification) error {
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
		fmt.Fprintf(w, "chain      intact: %d entries recomputed, every recorded chain_hash matches\n", v.Chain.Entries)
	} else {
		fmt.Fprintf(w, "chain      BROKEN at seq %d: %s\n", v.Chain.BreakSeq, v.Chain.BreakDetail)
	}
	if v.OK() {
		fmt.Fprintln(w, "result     verified")
		return nil
	}
	fmt.Fprintf(w, "result     %d problem(s)\n", len(v.Problems))
	for _, p := range v.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
	return nil
}
