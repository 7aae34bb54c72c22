package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/opsalert"
	"github.com/turnguard/turnguard/internal/topology"
)

// AlertAssetRecreated is the operational alert raised when the processor
// recreated a stream, bucket or consumer that disappeared while it ran.
const AlertAssetRecreated = "asset_recreated"

// repairer puts back the JetStream assets that disappear while the
// processor runs (an operator's or an attacker's delete), when putting them
// back is safe, and says so loudly:
//   - ACS_TURNSTATE: every session missing from the new bucket is rebuilt
//     from ACS_HOOKS when its next envelope comes (integrity.go);
//   - a partition consumer: it is recreated delivering the whole partition,
//     whose applied envelopes the session states skip, so nothing is
//     decided twice;
//   - ACS_HOOKS: recreated to number its messages on from above every
//     sequence a state or decision remembers (hooksWatermark), or every new
//     envelope would look like a redelivery and be skipped undecided. The
//     envelopes it held that were not decided yet are lost; the alert says
//     so;
//   - the output streams: recreated empty;
//   - ACS_HANDSHAKES (with the HTTP endpoint): recreated empty; sessions
//     over HTTP negotiate again.
//
// A stream or bucket that exists but differs from what turnguard needs is
// not touched; the partitions stay failing and readiness says why.
type repairer struct {
	js   jetstream.JetStream
	topo topology.Topology
	// seen is the highest ACS_HOOKS sequence this process knows was used.
	seen   func() uint64
	signer *receipt.Signer
	log    zerolog.Logger
	stats  *Stats
	// failed is why the last repair could not put everything back (nil:
	// it could), for readiness; it is logged when it changes.
	failed atomic.Pointer[string]
}

// failure is why the last repair could not put everything back ("" when
// it could, or none was needed).
func (r *repairer) failure() string {
	if f := r.failed.Load(); f != nil {
		return *f
	}
	return ""
}

// repair recreates what is missing and reports what it created.
func (r *repairer) repair(ctx context.Context) []string {
	created, err := topology.Restore(ctx, r.js, r.topo, r.seen(), r.log)
	var incompatible *topology.IncompatibleError
	switch {
	case errors.As(err, &incompatible):
		// Only what is there and different fails readiness; a server
		// that did not answer this time is the workers' business.
		if msg := err.Error(); msg != r.failure() {
			r.failed.Store(&msg)
			r.log.Error().Err(err).Msg("the streams, bucket or consumers cannot be put back as turnguard needs them")
		}
	case err != nil:
		if ctx.Err() == nil {
			r.log.Warn().Err(err).Msg("checking the streams, bucket and consumers")
		}
	default:
		r.failed.Store(nil)
	}
	for _, asset := range created {
		r.stats.Recreated.Add(1)
		r.report(ctx, asset)
	}
	return created
}

// report logs and alerts one recreated asset. Instances repairing the same
// asset together raise one alert: its id names the asset's creation time.
func (r *repairer) report(ctx context.Context, asset string) {
	consequence := map[string]string{
		acs.HooksStream: "the envelopes it held that were not yet decided are lost (their agents time out and apply their on_decision_failure); " +
			"history before now cannot be replayed, nor can sessions be rebuilt from it",
		acs.StateBucket:     "sessions are rebuilt from " + acs.HooksStream + " as their next envelopes arrive",
		acs.DecisionsStream: "the decisions it held are gone: receipts and timelines before now cannot be checked",
		acs.AlertsStream:    "the alerts it held are gone",
		acs.DLQStream:       "the dead letters it held are gone",
		acs.MembersBucket:   "instances re-announce themselves with their next heartbeat",
		acs.HandshakeBucket: "sessions over HTTP lost their negotiations and caller bindings: until their next handshake/hello, which binds the session to the caller sending it, " +
			"their steps are refused with -32003 under --handshake required (under optional, the next caller to use one binds it; " +
			"the session's state still names the caller that started it, so any other caller's steps are refused caller_not_bound)",
	}[asset]
	if consequence == "" {
		consequence = "it redelivers the partition from the start; envelopes already applied are skipped"
	}
	created := r.createdAt(ctx, asset)
	r.log.Error().Str("asset", asset).Str("consequence", consequence).Msg("a JetStream asset turnguard needs was gone while it ran; recreated")
	a := opsalert.Alert{ID: AlertAssetRecreated, Severity: "critical", Title: "Deleted JetStream asset recreated",
		Message: fmt.Sprintf("%s disappeared while turnguard ran and was recreated: %s", asset, consequence),
		MsgID:   AlertAssetRecreated + ":" + asset + ":" + strconv.FormatInt(created.UnixNano(), 10),
		Details: map[string]any{"asset": asset, "consequence": consequence}}
	if err := opsalert.Publish(ctx, r.js, r.signer, a); err != nil && ctx.Err() == nil {
		r.log.Error().Err(err).Str("asset", asset).Msg("publish the asset alert")
	}
}

// createdAt is when asset was created, for the alert's id (zero when it
// cannot be read: then each instance alerts on its own).
func (r *repairer) createdAt(ctx context.Context, asset string) time.Time {
	if name, ok := strings.CutPrefix(asset, acs.HooksStream+"/"); ok {
		if c, err := r.js.Consumer(ctx, acs.HooksStream, name); err == nil {
			return c.CachedInfo().Created
		}
		return time.Time{}
	}
	name := asset
	if asset == acs.StateBucket || asset == acs.MembersBucket || asset == acs.HandshakeBucket {
		name = acs.KVStream(asset)
	}
	if s, err := r.js.Stream(ctx, name); err == nil {
		return s.CachedInfo().Created
	}
	return time.Time{}
}

// needsRepair reports whether any of ws is failing or suspects its
// consumer: only then are the assets checked, so that a healthy processor
// asks the server nothing more.
func needsRepair(ws []*worker) bool {
	for _, w := range ws {
		if w.health.since.Load() != 0 || w.consumerHealth.since.Load() != 0 || w.suspect.Load() {
			return true
		}
	}
	return false
}
