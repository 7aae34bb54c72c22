package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/msghdr"
)

// dlBudget counts one request's dead letters: the first ones are kept one
// by one, the rest only counted, by reason, for one summary record. The
// items of a batch are answered one after another, so it needs no lock.
type dlBudget struct {
	left    int
	omitted map[string]int
}

// deadLetter keeps a request the endpoint refused itself, like the
// processor keeps what it refuses: the original bytes, the reason, the
// caller and the client's address in headers. A body too large for one
// NATS message keeps its beginning, and says so: over HTTP there is no
// other copy of it to point to.
func (g *Gateway) deadLetter(ctx context.Context, from origin, in incoming, ref *acs.Error, truncated bool) {
	if b := from.dl; b != nil {
		if b.left <= 0 {
			if b.omitted == nil {
				b.omitted = map[string]int{}
			}
			b.omitted[ref.Reason]++
			g.stats.DeadLettersOmitted.Add(1)
			return
		}
		b.left--
	}
	g.stats.DeadLettered.Add(1)
	m := nats.NewMsg(acs.DLQSubject(from.caller.Tenant))
	m.Data = in.raw
	m.Header.Set(acs.HdrErrorCode, strconv.Itoa(int(ref.Code)))
	m.Header.Set(acs.HdrErrorName, ref.Code.String())
	m.Header.Set(acs.HdrErrorReason, ref.Reason)
	m.Header.Set(acs.HdrErrorMessage, msghdr.Value(ref.Message))
	m.Header.Set(acs.HdrOriginalStream, "http")
	if from.caller.Name != "" {
		m.Header.Set(acs.HdrCaller, from.caller.Name)
	}
	if from.remote != "" {
		m.Header.Set(acs.HdrRemoteAddr, from.remote)
	}
	if id := in.head.RequestID; id != "" {
		m.Header.Set(acs.HdrRequestID, msghdr.Value(id))
	}
	if in.omitted > 0 {
		m.Header.Set(acs.HdrDeadLettersOmitted, strconv.Itoa(in.omitted))
	}
	if truncated {
		m.Header.Set(acs.HdrBodyTruncated, fmt.Sprintf("the body exceeded %d bytes; the first %d are kept", g.cfg.MaxBodyBytes, len(m.Data)))
	}
	if limit := g.nc.MaxPayload(); limit > 0 && int64(len(m.Data)+msghdr.Size(m.Header)) > limit {
		keep := max(0, int(limit)-msghdr.Size(m.Header)-256)
		m.Header.Set(acs.HdrBodyTruncated, fmt.Sprintf("%d bytes do not fit the server's max_payload %d; the first %d are kept", len(m.Data), limit, keep))
		m.Data = m.Data[:keep]
	}
	g.log.Warn().Str("http_caller", from.caller.Name).Str("remote", from.remote).Int("code", int(ref.Code)).
		Str("reason", ref.Reason).Str("error", ref.Message).Msg("HTTP request refused and dead-lettered")
	// Kept even when the client hung up meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deadLetterTimeout)
	defer cancel()
	if _, err := g.js.PublishMsg(ctx, m); err != nil {
		g.log.Warn().Err(err).Str("reason", ref.Reason).Msg("dead-letter a refused HTTP request")
	}
}

// summariseDeadLetters keeps, for a request whose refusals went beyond
// its dead-letter limit, one record counting the ones not kept, by reason.
func (g *Gateway) summariseDeadLetters(ctx context.Context, from origin) {
	b := from.dl
	if b == nil || len(b.omitted) == 0 {
		return
	}
	n := 0
	for _, c := range b.omitted {
		n += c
	}
	body, _ := json.Marshal(map[string]any{"dead_letters_omitted": n, "by_reason": b.omitted})
	from.dl = nil // the summary itself is kept whatever the budget
	g.deadLetter(ctx, from, incoming{raw: body, omitted: n}, &acs.Error{Code: acs.CodeInvalidRequest, Reason: acs.ReasonDeadLetterLimit,
		Message: fmt.Sprintf("%d more refusals of this request were not dead-lettered one by one (limit %d a request)", n, g.cfg.MaxDeadLetters)}, false)
}

// deadLetterTimeout bounds the wait for ACS_DLQ to store a dead letter.
const deadLetterTimeout = 5 * time.Second
