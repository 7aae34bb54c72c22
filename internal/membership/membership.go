// Package membership is how processor instances find each other: each
// keeps a sealed record with a TTL in acs.MembersBucket, renewed with an
// advancing beat; a member is live while its beat advances (Liveness), and
// every instance assigns the partitions from the same live set (Assign),
// so they agree without talking to each other.
package membership

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Member is what a processor instance says about itself in acs.MembersBucket,
// refreshed every heartbeat. Operators read it with
// `nats kv get ACS_PROCESSORS <id>`.
type Member struct {
	ID      string    `json:"id"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Started time.Time `json:"started"`
	// Owns lists the partitions the instance consumes.
	Owns []int `json:"owns"`
	// Pins maps a partition consumer to the pin id the server gave this
	// instance for it: a pin nobody live claims belongs to a dead instance
	// and is released at once instead of after PinnedTTL.
	Pins map[string]string `json:"pins,omitempty"`
	// Beat is the record's heartbeat: strictly increasing from one record
	// of the instance to the next (its writer's clock in Unix nanoseconds,
	// or one more than the previous beat). It is sealed with the rest, so
	// only the instance can advance it: a copy of its record put back by
	// someone else, or by the server on someone's request, repeats an old
	// beat, and a member whose beat stops advancing is dead (Liveness)
	// however often its record is stored.
	Beat uint64 `json:"beat"`
}

// memberKind is the kind sealed into member records' MACs, so that no
// state value can pass for one.
const memberKind = "member"

// Registry reads and writes acs.MembersBucket. Its records are sealed with the
// state key, like the state: a record no processor wrote — a fake member
// that would make the real ones give up partitions to nobody — does not
// verify and is left out of the member set.
type Registry struct {
	kv       jetstream.KeyValue
	sealer   *turnstate.Sealer
	rejected func(key string, rev uint64, reason string)
}

// NewRegistry reads and writes members in kv, sealed with sealer; rejected
// (may be nil) is told of each record that does not verify: its key,
// revision and why.
func NewRegistry(kv jetstream.KeyValue, sealer *turnstate.Sealer, rejected func(key string, rev uint64, reason string)) Registry {
	return Registry{kv: kv, sealer: sealer, rejected: rejected}
}

// Heartbeat stores m under its id; the bucket's TTL forgets it unless the
// next heartbeat comes in time.
func (ms Registry) Heartbeat(ctx context.Context, m Member) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode member %s: %w", m.ID, err)
	}
	if _, err := ms.kv.Put(ctx, m.ID, ms.sealer.Seal(memberKind, m.ID, data)); err != nil {
		return fmt.Errorf("heartbeat of %s: %w", m.ID, err)
	}
	return nil
}

// Live returns every record present that verifies, by id: what the
// bucket's TTL has not forgotten. Whether its writer still renews it is
// Liveness's call: a record can be stored again by others.
func (ms Registry) Live(ctx context.Context) (map[string]Member, error) {
	keys, err := ms.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", acs.MembersBucket, err)
	}
	out := map[string]Member{}
	for k := range keys.Keys() {
		e, err := ms.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // expired or left between the listing and the read
		}
		if err != nil {
			return nil, fmt.Errorf("read member %s: %w", k, err)
		}
		record, reason := ms.sealer.Open(memberKind, k, e.Value())
		if reason != "" {
			if ms.rejected != nil {
				ms.rejected(k, e.Revision(), reason)
			}
			continue
		}
		var m Member
		if err := json.Unmarshal(record, &m); err != nil || m.ID != k {
			// Sealed by a processor, so this cannot happen short of a
			// bug; such a record is no member either.
			continue
		}
		out[k] = m
	}
	return out, nil
}

// Liveness tells which members renew their records, by the clock of the
// instance that reads them: a record that verifies says who wrote it, not
// that its writer still lives. A member is alive while the beat of its
// record has advanced within the TTL, as this instance last saw it; a
// member first seen is given one TTL. It is the processor's, not the
// decision core's: it reads the time it is given.
type Liveness struct {
	ttl  time.Duration
	seen map[string]beatSeen
}

// beatSeen is the highest beat seen of a member and when it was first seen.
type beatSeen struct {
	beat uint64
	at   time.Time
}

// maxRemembered bounds the members Liveness remembers. Only sealed records
// reach it, so only instances that once ran; a member whose record
// disappeared is remembered so that its last record put back later is
// still silent, until the bound is reached.
const maxRemembered = 4096

// NewLiveness returns a Liveness for members with the given TTL.
func NewLiveness(ttl time.Duration) *Liveness {
	return &Liveness{ttl: ttl, seen: map[string]beatSeen{}}
}

// Observe notes the records read at now (a reading of the monotonic
// clock) and returns the members among them that are alive, with how long
// each has not advanced its beat.
func (l *Liveness) Observe(records map[string]Member, now time.Time) (map[string]Member, map[string]time.Duration) {
	if len(l.seen)+len(records) > maxRemembered {
		for id := range l.seen {
			if _, ok := records[id]; !ok {
				delete(l.seen, id)
			}
		}
	}
	alive := map[string]Member{}
	silence := map[string]time.Duration{}
	for id, m := range records {
		last, known := l.seen[id]
		if !known || m.Beat > last.beat {
			last = beatSeen{beat: m.Beat, at: now}
			l.seen[id] = last
		}
		if d := now.Sub(last.at); d < l.ttl {
			alive[id], silence[id] = m, d
		}
	}
	return alive, silence
}

// NextBeat is the beat of an instance's next record after prev: its
// clock's Unix nanoseconds, or prev+1 if the clock has not moved past prev
// (or went back), so that its beats strictly increase.
func NextBeat(prev uint64, now time.Time) uint64 {
	if n := now.UnixNano(); n > 0 && uint64(n) > prev {
		return uint64(n)
	}
	return prev + 1
}

// Leave removes the instance's key so the others take its partitions
// without waiting for the TTL.
func (ms Registry) Leave(ctx context.Context, id string) error {
	if err := ms.kv.Delete(ctx, id); err != nil {
		return fmt.Errorf("leave %s: %w", acs.MembersBucket, err)
	}
	return nil
}

// Changes signals when an instance joins or leaves on purpose, so the
// others reassign at once rather than at their next heartbeat. (An
// instance that dies is only noticed when its beat stops advancing, which
// the bucket does not announce.)
func (ms Registry) Changes(ctx context.Context, log zerolog.Logger) <-chan struct{} {
	out := make(chan struct{}, 1)
	w, err := ms.kv.WatchAll(ctx, jetstream.MetaOnly())
	if err != nil {
		log.Warn().Err(err).Msg("cannot watch the member set; noticing changes at heartbeats only")
		return out
	}
	go func() {
		defer func() { _ = w.Stop() }()
		known := map[string]bool{}
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue // the end of the initial values
				}
				// Heartbeats of known members change nothing.
				if gone := e.Operation() != jetstream.KeyValuePut; gone == known[e.Key()] {
					if gone {
						delete(known, e.Key())
					} else {
						known[e.Key()] = true
					}
					select {
					case out <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	return out
}

// Assign maps each partition to one of the member ids. Every instance
// computes it from the same member set, so they agree without talking to
// each other. It is balanced (no member gets more than ceil(P/n)) and
// stable: a partition's member is the highest-ranked one, by a hash of
// member and partition, that still has room, so a member joining or
// leaving moves few partitions.
func Assign(partitions int, ids []string) []string {
	if len(ids) == 0 {
		return make([]string, partitions)
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	capacity := (partitions + len(ids) - 1) / len(ids)
	load := map[string]int{}
	out := make([]string, partitions)
	ranked := make([]string, len(ids))
	for p := range partitions {
		copy(ranked, ids)
		slices.SortStableFunc(ranked, func(a, b string) int {
			ra, rb := rank(a, p), rank(b, p)
			switch {
			case ra > rb:
				return -1
			case ra < rb:
				return 1
			}
			return 0
		})
		for _, id := range ranked {
			if load[id] < capacity {
				out[p] = id
				load[id]++
				break
			}
		}
	}
	return out
}

func rank(id string, partition int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(partition)))
	// FNV's low bits mix poorly for near-identical inputs; one round of a
	// finaliser spreads them.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}
