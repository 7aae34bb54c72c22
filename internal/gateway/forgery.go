package gateway

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/opsalert"
	"github.com/turnguard/turnguard/internal/receipt"
	"github.com/turnguard/turnguard/pkg/client"
)

// AlertForgedDecision is the operational alert raised when the endpoint
// drops a forged message on a decision subject.
const AlertForgedDecision = "forged_decision_dropped"

// forgeryAlarm turns the forged decisions the endpoint drops into
// operational alerts: at most one a second, each saying how many were
// dropped in all, so that a forger can flood neither the alert stream nor
// the endpoint (the publish runs on its own goroutine).
type forgeryAlarm struct {
	js      jetstream.JetStream
	signer  *receipt.Signer
	log     zerolog.Logger
	dropped atomic.Uint64
	// last is when the last alert went out (Unix nanoseconds).
	last atomic.Int64
}

func (a *forgeryAlarm) drop(d client.Drop) {
	if !d.Forged() {
		return // a genuine decision of another envelope: no attack
	}
	n := a.dropped.Add(1)
	now := time.Now().UnixNano()
	last := a.last.Load()
	if now-last < int64(time.Second) || !a.last.CompareAndSwap(last, now) {
		return
	}
	al := opsalert.Alert{ID: AlertForgedDecision, Severity: "critical", Title: "Forged decision dropped",
		Message: fmt.Sprintf("a message on %s claiming to answer sequence %d is not turnguard's (%v); the HTTP endpoint dropped it (%d forged so far) and waits for the processor's answer",
			d.Subject, d.Seq, d.Reason, n),
		MsgID:   AlertForgedDecision + ":" + strconv.FormatInt(now, 10),
		Details: map[string]any{"subject": d.Subject, "claimed_seq": d.Seq, "request_id": d.RequestID, "reason": d.Reason.Error(), "dropped_total": n}}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := opsalert.Publish(ctx, a.js, a.signer, al); err != nil {
			a.log.Error().Err(err).Msg("publish the forged-decision alert")
		}
	}()
}
