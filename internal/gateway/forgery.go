package gateway

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/opsalert"
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

// AlertHandshakeInvalid is the operational alert raised when an
// ACS_HANDSHAKES record does not verify under the state key: written by
// someone other than a turnguard endpoint, edited, or moved from another
// session's key.
const AlertHandshakeInvalid = "handshake_record_invalid"

// handshakeAlarm reports handshake records that do not verify: counted
// (Stats.HandshakesInvalid), logged and alerted at most once a second, so
// that whoever writes junk into the bucket floods neither the log nor the
// alert stream.
type handshakeAlarm struct {
	js     jetstream.JetStream
	signer *receipt.Signer
	log    zerolog.Logger
	count  *atomic.Uint64
	last   atomic.Int64
}

func (a *handshakeAlarm) invalid(key, reason string) {
	n := a.count.Add(1)
	now := time.Now().UnixNano()
	last := a.last.Load()
	if now-last < int64(time.Second) || !a.last.CompareAndSwap(last, now) {
		return
	}
	a.log.Warn().Str("key", key).Str("reason", reason).Uint64("invalid_total", n).
		Msg("a handshake record does not verify under the state key: taken as absent")
	al := opsalert.Alert{ID: AlertHandshakeInvalid, Severity: "critical", Title: "Handshake record does not verify",
		Message: fmt.Sprintf("the ACS_HANDSHAKES record %s is not one a turnguard endpoint wrote for that key (%s); it is taken as absent and replaced by the session's next negotiation (%d such records so far)",
			key, reason, n),
		MsgID:   AlertHandshakeInvalid + ":" + strconv.FormatInt(now, 10),
		Details: map[string]any{"bucket": acs.HandshakeBucket, "key": key, "reason": reason, "invalid_total": n}}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := opsalert.Publish(ctx, a.js, a.signer, al); err != nil {
			a.log.Error().Err(err).Msg("publish the handshake-record alert")
		}
	}()
}
