package stream

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
	"github.com/turnguard/turnguard/internal/opsalert"
)

// AlertStreamPurged is the critical operational alert raised when messages
// left ACS_HOOKS, ACS_DECISIONS or the state bucket in a way their limits
// do not explain: a purge or deletes through the stream API.
const AlertStreamPurged = "stream_purged"

// purgeSlack is how close to its age limit a message may be and still be
// taken for one that aged out: the server's and this host's clocks differ.
const purgeSlack = time.Minute

// purgeWatch compares the state of the streams that hold what sessions are
// rebuilt from between two checks. A purge leaves no marker, so the only
// trace of one is messages gone that nothing else removes:
//   - ACS_HOOKS and ACS_DECISIONS keep every message until its age (or,
//     for the output stream, a byte limit) removes it, so messages missing
//     from the count while none was old enough to age out were removed by
//     hand;
//   - the state bucket keeps one value per key until the session TTL: keys
//     missing while no value was old enough to expire were purged.
//
// Each session the purge took is rebuilt from ACS_HOOKS when it next loads
// (earlierEnvelope); this tells the operator at once, and about the whole.
type purgeWatch struct {
	js     jetstream.JetStream
	limits map[string]purgeLimits
	prev   map[string]purgeSeen
	signer *receipt.Signer
	log    zerolog.Logger
}

// purgeLimits is what removes messages from a stream by itself.
type purgeLimits struct {
	maxAge time.Duration
	// bytes: a byte limit drops the oldest messages at any age.
	bytes bool
	// kv: a bucket, whose writes replace the key's previous value.
	kv bool
}

// purgeSeen is a stream's state at the previous check.
type purgeSeen struct {
	created time.Time
	state   jetstream.StreamState
	at      time.Time
}

func newPurgeWatch(js jetstream.JetStream, limits map[string]purgeLimits, signer *receipt.Signer, log zerolog.Logger) *purgeWatch {
	return &purgeWatch{js: js, limits: limits, prev: map[string]purgeSeen{}, signer: signer, log: log}
}

// check reads each stream's state and alerts the ones that lost messages
// since the previous check that their limits do not explain.
func (p *purgeWatch) check(ctx context.Context) {
	for name, lim := range p.limits {
		s, err := p.js.Stream(ctx, name)
		if err != nil {
			// Gone (repair recreates it, and alerts) or unreadable now:
			// the next state read is the new baseline.
			delete(p.prev, name)
			continue
		}
		info := s.CachedInfo()
		now := time.Now()
		cur := purgeSeen{created: info.Created, state: info.State, at: now}
		prev, ok := p.prev[name]
		p.prev[name] = cur
		if !ok || !prev.created.Equal(cur.created) || cur.state.LastSeq < prev.state.LastSeq {
			continue // a new stream: recreated, and alerted as such
		}
		if removed := purged(lim, prev, cur); removed > 0 {
			p.alert(ctx, name, removed, prev, cur)
		}
	}
}

// purged is how many messages left a stream between two states that its
// limits do not explain (0: none, or it cannot tell).
func purged(lim purgeLimits, prev, cur purgeSeen) uint64 {
	if lim.bytes {
		return 0 // a byte limit removes messages of any age
	}
	if lim.maxAge > 0 {
		// Could anything seen then, or written since, have aged out?
		oldest := prev.state.FirstTime
		if prev.state.Msgs == 0 {
			oldest = prev.at
		}
		if cur.at.Sub(oldest)+purgeSlack >= lim.maxAge {
			return 0
		}
	}
	if lim.kv {
		// Nothing expired, and writes keep or add keys: fewer keys means
		// purged or deleted ones.
		if cur.state.NumSubjects < prev.state.NumSubjects {
			return prev.state.NumSubjects - cur.state.NumSubjects
		}
		return 0
	}
	expected := prev.state.Msgs + (cur.state.LastSeq - prev.state.LastSeq)
	if cur.state.Msgs < expected {
		return expected - cur.state.Msgs
	}
	return 0
}

func (p *purgeWatch) alert(ctx context.Context, name string, removed uint64, prev, cur purgeSeen) {
	consequence := map[string]string{
		acs.HooksStream:               "the purged envelopes are lost: sessions whose history they were cannot be rebuilt (their steps are refused when their state does not verify) nor replayed",
		acs.DecisionsStream:           "the purged decisions are gone: receipts and timelines of them cannot be checked; sessions without state or decisions are rebuilt from " + acs.HooksStream,
		acs.KVStream(acs.StateBucket): "the purged sessions are rebuilt from " + acs.HooksStream + " as their next envelopes arrive",
	}[name]
	p.log.Error().Str("stream", name).Uint64("removed", removed).Uint64("first_seq", cur.state.FirstSeq).Str("consequence", consequence).
		Msg("messages left a stream that its limits do not explain: purged or deleted through the stream API")
	a := opsalert.Alert{ID: AlertStreamPurged, Severity: "critical", Title: "Stream purged",
		Message: fmt.Sprintf("%d message(s) left %s between two checks that its limits do not explain: it was purged, or messages were deleted; %s", removed, name, consequence),
		MsgID:   AlertStreamPurged + ":" + name + ":" + strconv.FormatUint(cur.state.FirstSeq, 10) + ":" + strconv.FormatUint(cur.state.LastSeq, 10) + ":" + strconv.FormatUint(cur.state.Msgs, 10),
		Details: map[string]any{"stream": name, "removed": removed, "first_seq": cur.state.FirstSeq, "last_seq": cur.state.LastSeq,
			"messages": cur.state.Msgs, "messages_before": prev.state.Msgs, "consequence": consequence}}
	if err := opsalert.Publish(ctx, p.js, p.signer, a); err != nil && ctx.Err() == nil {
		p.log.Error().Err(err).Str("stream", name).Msg("publish the purge alert")
	}
}
