package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/guardian"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// SessionSummary is one session as `replay sessions` lists it.
type SessionSummary struct {
	Tenant    string    `json:"tenant"`
	SessionID string    `json:"session_id"`
	Agent     string    `json:"agent"`
	First     time.Time `json:"first"`
	Last      time.Time `json:"last"`
	// Turns counts the turns opened in range: by a turnStart the processor
	// did not deny or refuse, or implicitly (a step whose decision carries
	// turn_implicit). The session state's turns_started, the turns that
	// count toward windows, can be fewer: a turn in which nothing was let
	// through, and a nested turn, do not count there.
	Turns     int  `json:"turns"`
	Envelopes int  `json:"envelopes"`
	Denies    int  `json:"denies"`
	Alerts    int  `json:"alerts"`
	Closed    bool `json:"closed"`
}

// Sessions summarizes the sessions with envelopes in r, of tenant and
// (when set) agent, in order of their first envelope.
func (s *Source) Sessions(ctx context.Context, r Range, tenant, agent string, progress io.Writer) ([]SessionSummary, error) {
	if r.Empty() {
		return nil, nil
	}
	byKey := map[string]*SessionSummary{}
	seqSession := map[uint64]string{}
	turnStarts := map[uint64]bool{}
	var order []string
	var since time.Time
	bar := NewProgress(progress, r.From, r.To)
	err := s.Each(ctx, r, []string{acs.StoredFilter(tenant, "*", "*")}, func(e Envelope) error {
		bar.At(e.Seq)
		if e.RouteErr != nil {
			return nil
		}
		if since.IsZero() {
			since = e.Time
		}
		key := e.Route.SessionKey()
		seqSession[e.Seq] = key
		ss := byKey[key]
		if ss == nil {
			ss = &SessionSummary{Tenant: e.Route.Tenant, SessionID: e.Route.SessionID, First: e.Time}
			byKey[key] = ss
			order = append(order, key)
		}
		ss.Last = e.Time
		ss.Envelopes++
		switch e.Route.Hook {
		case "turnStart":
			// Whether it opened a turn is in its decision, read below.
			turnStarts[e.Seq] = true
		case "sessionEnd":
			ss.Closed = true
		case "sessionStart":
			// A sessionStart after sessionEnd reopens the session (a
			// resumed conversation: turnstate's session_reopened).
			ss.Closed = false
		}
		if ss.Agent == "" {
			ss.Agent = guardian.AgentOf(e.Data)
		}
		return nil
	})
	bar.Done()
	if err != nil {
		return nil, err
	}
	rec, err := s.ReadRecorded(ctx, tenant, "", since.Add(-time.Minute), HeadersOnly)
	if err != nil {
		return nil, err
	}
	for seq, d := range rec.Decisions {
		ss := byKey[seqSession[seq]]
		if ss == nil {
			continue
		}
		if d.Kind() == string(acs.Deny) {
			ss.Denies++
		}
		if opensTurn(d, turnStarts[seq]) {
			ss.Turns++
		}
	}
	for seq, as := range rec.Alerts {
		if ss := byKey[seqSession[seq]]; ss != nil {
			ss.Alerts += len(as)
		}
	}
	var out []SessionSummary
	for _, k := range order {
		if agent == "" || byKey[k].Agent == agent {
			out = append(out, *byKey[k])
		}
	}
	slices.SortStableFunc(out, func(a, b SessionSummary) int { return a.First.Compare(b.First) })
	return out, nil
}

// opensTurn reports whether the step a recorded decision answers opened a
// turn, by the processor's rule: a turnStart opens one unless it was denied
// (its turn then does not count) or refused (it never reached the state);
// another step opens one implicitly, which its decision says with the
// turn_implicit reason code.
func opensTurn(d Decision, turnStart bool) bool {
	kind := d.Kind()
	if turnStart {
		return kind == string(acs.Allow) || kind == string(acs.Ask)
	}
	// Most decisions do not mention it: look before decoding.
	if !bytes.Contains(d.Data, []byte(turnstate.TurnImplicit)) {
		return false
	}
	var r acs.Response
	if json.Unmarshal(d.Data, &r) != nil || r.Result == nil {
		return false
	}
	return slices.Contains(r.Result.ReasonCodes, turnstate.TurnImplicit)
}

// WriteSessions prints sessions as a table.
func WriteSessions(w io.Writer, ss []SessionSummary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tAGENT\tFIRST\tLAST\tTURNS\tENVELOPES\tDENIES\tALERTS\tSTATUS")
	for _, s := range ss {
		status := "open"
		if s.Closed {
			status = "closed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.SessionID, s.Agent, s.First.UTC().Format(time.RFC3339),
			s.Last.UTC().Format(time.RFC3339), s.Turns, s.Envelopes, s.Denies, s.Alerts, status)
	}
	return tw.Flush()
}
