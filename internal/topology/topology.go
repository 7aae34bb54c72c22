package topology

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Duplicate windows of the streams whose window is not configurable.
const (
	// HooksDuplicates is ACS_HOOKS' window for publishers' Nats-Msg-Id.
	HooksDuplicates = 2 * time.Minute
	// DLQDuplicates is ACS_DLQ's window: a dead letter republished after
	// a crash is dropped for a day.
	DLQDuplicates = 24 * time.Hour
)

// DefaultRetentionAge is every stream's default MaxAge.
//
// Why an age and no byte limit by default: JetStream reserves a stream's
// MaxBytes against the server's store limit when the stream is created or
// updated (nats-server jetStream.checkBytesLimits and
// reserveStreamResources), and a server without max_file_store takes 75%
// of the free disk as that limit. Four streams of, say, 10 GiB each would
// fail to be created ("insufficient storage resources available") on a
// disk with less than about 53 GiB free, or on a test machine running many
// embedded servers, whatever the streams actually hold. An age reserves
// nothing. So by default every stream is bounded in time, and in size only
// by the server's (or the account's) store limit; a full store refuses
// publishes loudly rather than dropping anything.
//
// Why seven days: at least the session TTL (24h by default; ACS_HOOKS and
// ACS_DECISIONS must cover a live session, see Validate), several times
// over, so that a processor outage over a long weekend does not age out
// envelopes nobody decided yet, and a week of history for replay's
// timelines, verify and back-tests. Keep more with the --*-max-age flags.
const DefaultRetentionAge = 7 * 24 * time.Hour

// MinRetentionBytes is the smallest MaxBytes a stream may be given (0
// aside): one message of the largest size ACS_HOOKS accepts.
const MinRetentionBytes = acs.HooksMaxMsgSize

// Retention bounds what one stream keeps. The zero value keeps everything
// until the server's store limit.
type Retention struct {
	// MaxAge removes messages older than this (0: no age limit).
	MaxAge time.Duration
	// MaxBytes bounds the stream's size (0: no limit of the stream's own;
	// the server's or the account's store limit bounds it). What happens
	// at the limit is the stream's discard policy: ACS_HOOKS refuses new
	// messages, the output streams drop their oldest.
	MaxBytes int64
}

// Topology is the shape of the streams, bucket and consumers turnguard
// needs. Ensure creates what is missing, applies the streams' retention
// to the ones that exist and refuses what is incompatible.
type Topology struct {
	Partitions int
	Replicas   int
	// SessionTTL drops a session's state after this long without an
	// envelope.
	SessionTTL time.Duration
	// DecisionDedupWindow is ACS_DECISIONS' duplicate window; it must
	// outlast the time a redelivered envelope can take to come back.
	DecisionDedupWindow time.Duration
	// AckWait is how long a partition consumer waits for an ack before it
	// redelivers.
	AckWait time.Duration
	// MaxAckPending bounds each partition's unacknowledged messages.
	MaxAckPending int
	// PinnedTTL is how long a partition consumer keeps its pinned client
	// without a pull request from it before the server pins another
	// instance: the last line of failover when an instance dies.
	PinnedTTL time.Duration
	// MemberTTL is how long an instance counts as live after its last
	// heartbeat; partitions move away from it after that.
	MemberTTL time.Duration
	// HandshakeTTL is the TTL of ACS_HANDSHAKES, the HTTP endpoint's
	// negotiated sessions; 0 (no HTTP endpoint) leaves the bucket out.
	// The processor gives it the session TTL when --http is on: only
	// then is the bucket used, and a processor deciding only NATS
	// envelopes neither creates it nor fails readiness over it.
	HandshakeTTL time.Duration
	// Retention of each stream (docs/OPERATING.md "Limits"). Unlike the rest of the
	// topology, Ensure applies it to streams that exist.
	HooksRetention     Retention
	DecisionsRetention Retention
	AlertsRetention    Retention
	DLQRetention       Retention
}

// Default is what the processor runs with unless told otherwise.
func Default() Topology {
	return Topology{
		Partitions:          16,
		Replicas:            1,
		SessionTTL:          24 * time.Hour,
		DecisionDedupWindow: 10 * time.Minute,
		AckWait:             30 * time.Second,
		MaxAckPending:       1024,
		PinnedTTL:           15 * time.Second,
		MemberTTL:           5 * time.Second,
		HooksRetention:      Retention{MaxAge: DefaultRetentionAge},
		DecisionsRetention:  Retention{MaxAge: DefaultRetentionAge},
		AlertsRetention:     Retention{MaxAge: DefaultRetentionAge},
		DLQRetention:        Retention{MaxAge: DefaultRetentionAge},
	}
}

// streamLimits is one stream's retention with the duplicate window it must
// hold.
type streamLimits struct {
	name       string
	retention  Retention
	duplicates time.Duration
}

func (t Topology) limits() []streamLimits {
	return []streamLimits{
		{acs.HooksStream, t.HooksRetention, HooksDuplicates},
		{acs.DecisionsStream, t.DecisionsRetention, t.DecisionDedupWindow},
		{acs.AlertsStream, t.AlertsRetention, t.DecisionDedupWindow},
		{acs.DLQStream, t.DLQRetention, DLQDuplicates},
	}
}

// Validate checks the topology's values.
func (t Topology) Validate() error {
	var errs []error
	if t.Partitions < 1 || t.Partitions > 1024 {
		errs = append(errs, fmt.Errorf("partitions must be 1..1024, not %d", t.Partitions))
	}
	if t.Replicas < 1 || t.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas must be 1..5, not %d", t.Replicas))
	}
	if t.SessionTTL < time.Minute {
		errs = append(errs, fmt.Errorf("session TTL must be at least 1m, not %s", t.SessionTTL))
	}
	if t.AckWait < time.Second {
		errs = append(errs, fmt.Errorf("ack wait must be at least 1s, not %s", t.AckWait))
	}
	if t.PinnedTTL < time.Second {
		errs = append(errs, fmt.Errorf("pinned TTL must be at least 1s, not %s", t.PinnedTTL))
	}
	if t.MemberTTL < time.Second {
		errs = append(errs, fmt.Errorf("member TTL must be at least 1s, not %s", t.MemberTTL))
	}
	if t.HandshakeTTL != 0 && t.HandshakeTTL < time.Second {
		errs = append(errs, fmt.Errorf("handshake TTL must be 0 (no HTTP endpoint) or at least 1s, not %s", t.HandshakeTTL))
	}
	if t.MaxAckPending < 1 {
		errs = append(errs, fmt.Errorf("max ack pending must be positive, not %d", t.MaxAckPending))
	}
	if t.DecisionDedupWindow < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("decision duplicate window must be at least 100ms (JetStream's smallest), not %s", t.DecisionDedupWindow))
	}
	return errors.Join(append(errs, t.validateRetention()...)...)
}

func (t Topology) validateRetention() []error {
	var errs []error
	for _, l := range t.limits() {
		r := l.retention
		if r.MaxAge < 0 {
			errs = append(errs, fmt.Errorf("%s max age must not be negative (0: no age limit), not %s", l.name, r.MaxAge))
		} else if r.MaxAge > 0 && r.MaxAge < l.duplicates {
			// JetStream refuses a duplicate window longer than the age.
			errs = append(errs, fmt.Errorf("%s max age %s is shorter than its duplicate window %s; give at least that, or 0 for no age limit", l.name, r.MaxAge, l.duplicates))
		}
		if r.MaxBytes < 0 {
			errs = append(errs, fmt.Errorf("%s max bytes must not be negative (0: bounded by the server's store limit), not %d", l.name, r.MaxBytes))
		} else if r.MaxBytes > 0 && r.MaxBytes < MinRetentionBytes {
			errs = append(errs, fmt.Errorf("%s max bytes %d is less than one largest message (%d); give at least that, or 0 for the server's store limit", l.name, r.MaxBytes, MinRetentionBytes))
		}
	}
	// A live session is rebuilt from its envelopes in ACS_HOOKS when its
	// stored value is deleted or does not verify; without them, one that
	// does not verify has its steps refused (state_unverifiable). And the
	// session's newest decision
	// in ACS_DECISIONS is what tells a rolled-back value and an outbox
	// already published. Both must outlive an idle session's state.
	if a := t.HooksRetention.MaxAge; a > 0 && a < t.SessionTTL {
		errs = append(errs, fmt.Errorf("%s max age %s is shorter than the session TTL %s: a live session's history would age out and its state could not be rebuilt (its steps would be refused as state_unverifiable); give at least the session TTL, or 0 for no age limit", acs.HooksStream, a, t.SessionTTL))
	}
	if a := t.DecisionsRetention.MaxAge; a > 0 && a < t.SessionTTL {
		errs = append(errs, fmt.Errorf("%s max age %s is shorter than the session TTL %s: a live session's newest decision would age out, and with it the check of its stored state against rollback; give at least the session TTL, or 0 for no age limit", acs.DecisionsStream, a, t.SessionTTL))
	}
	return errs
}

// PartitionTransform is the ACS_HOOKS subject transform: it moves
// acs.hooks.<tenant>.<session>.<hook> to acs.part.<p>.<tenant>.<session>.<hook>,
// p computed by NATS from tenant and session. The destination lies outside
// acs.hooks.>, so nothing published directly can pose as partitioned, and
// everything left under acs.hooks.> is a malformed subject.
func PartitionTransform(partitions int) *jetstream.SubjectTransformConfig {
	return PartitionTransformOf(acs.InboundPrefix, acs.PartitionedPrefix, partitions)
}

// PartitionTransformOf is PartitionTransform from in.<tenant>.<session>.<hook>
// to part.<p>.<tenant>.<session>.<hook>: the same hash of tenant and session
// for a stream of ACS_HOOKS' shape under other subjects (loadgen's
// pipeline floor).
func PartitionTransformOf(in, part string, partitions int) *jetstream.SubjectTransformConfig {
	return &jetstream.SubjectTransformConfig{
		Source:      in + ".*.*.*",
		Destination: part + ".{{partition(" + strconv.Itoa(partitions) + ",1,2)}}.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}",
	}
}

func (t Topology) streams() []jetstream.StreamConfig {
	base := func(name, desc, subject string, r Retention, dup time.Duration) jetstream.StreamConfig {
		// MaxMsgSize and MaxBytes -1 (unlimited) are what the server
		// stores for "not set". Discard old (the zero value) is what the
		// output streams do at MaxBytes: their oldest messages go.
		return jetstream.StreamConfig{Name: name, Description: desc, Subjects: []string{subject + ".>"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: t.Replicas, MaxMsgSize: -1,
			MaxAge: r.MaxAge, MaxBytes: serverBytes(r.MaxBytes), Duplicates: dup}
	}
	hooks := base(acs.HooksStream, "turnguard: inbound ACS hook envelopes", acs.InboundPrefix, t.HooksRetention, HooksDuplicates)
	hooks.SubjectTransform = PartitionTransform(t.Partitions)
	hooks.MaxMsgSize = acs.HooksMaxMsgSize
	// ACS_HOOKS holds envelopes not decided yet: at its size limit it
	// refuses a new one (the publisher gets an error and the agent fails
	// closed) rather than dropping the oldest, which may be undecided.
	hooks.Discard = jetstream.DiscardNew
	decisions := base(acs.DecisionsStream, "turnguard: ACS response envelopes, one per inbound envelope", acs.DecisionsPrefix, t.DecisionsRetention, t.DecisionDedupWindow)
	alerts := base(acs.AlertsStream, "turnguard: alerts (OCSF Detection Findings)", acs.AlertsPrefix, t.AlertsRetention, t.DecisionDedupWindow)
	dlq := base(acs.DLQStream, "turnguard: refused input, original bytes", acs.DLQPrefix, t.DLQRetention, DLQDuplicates)
	return []jetstream.StreamConfig{hooks, decisions, alerts, dlq}
}

// serverBytes is a MaxBytes as the server stores it: -1 for no limit.
func serverBytes(b int64) int64 {
	if b <= 0 {
		return -1
	}
	return b
}

func (t Topology) buckets() []jetstream.KeyValueConfig {
	state := t.StateBucket(acs.StateBucket)
	state.Description = "turnguard: ACS session and turn state"
	bs := []jetstream.KeyValueConfig{
		state,
		// Memory storage: membership is only ever as old as MemberTTL.
		{Bucket: acs.MembersBucket, Description: "turnguard: live processor instances and the partitions they hold",
			History: 1, TTL: t.MemberTTL, Storage: jetstream.MemoryStorage, Replicas: t.Replicas},
	}
	if t.HandshakeTTL > 0 {
		// Part of the topology rather than the endpoint's own, so that a
		// deleted one is recreated (and alerted) like every other asset.
		bs = append(bs, jetstream.KeyValueConfig{Bucket: acs.HandshakeBucket, Description: "turnguard: the ACS handshakes of sessions over HTTP",
			History: 1, TTL: t.HandshakeTTL, Storage: jetstream.FileStorage, Replicas: t.Replicas})
	}
	return bs
}

// StateBucket is the configuration of ACS_TURNSTATE, named bucket: one
// value per session, dropped after SessionTTL without a write. loadgen's
// pipeline floor writes a scratch bucket of this shape.
func (t Topology) StateBucket(bucket string) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: t.SessionTTL, Storage: jetstream.FileStorage, Replicas: t.Replicas}
}

func (t Topology) consumers() []jetstream.ConsumerConfig {
	var cs []jetstream.ConsumerConfig
	for p := range t.Partitions {
		c := t.PartitionConsumer(acs.PartitionConsumer(p), acs.PartitionFilter(p))
		c.Description = fmt.Sprintf("turnguard: partition %d of %d", p, t.Partitions)
		cs = append(cs, c)
	}
	unrouted := t.consumer(acs.UnroutedConsumer, acs.InboundPrefix+".>")
	unrouted.Description = "turnguard: malformed subjects, dead-lettered"
	return append(cs, unrouted)
}

// PartitionConsumer is the configuration of a partition's consumer, named
// durable and filtered on filter (acs.PartitionConsumer and
// acs.PartitionFilter for turnguard's own; loadgen's pipeline floor
// consumes a scratch stream with the same shape).
func (t Topology) PartitionConsumer(durable, filter string) jetstream.ConsumerConfig {
	c := t.consumer(durable, filter)
	// One pinned client per partition: the server delivers to one
	// instance at a time, which keeps a partition in stream order
	// across instances; the KV revision check fences the rest.
	c.PriorityPolicy = jetstream.PriorityPolicyPinned
	c.PriorityGroups = []string{acs.PartitionGroup}
	c.PinnedTTL = t.PinnedTTL
	return c
}

// consumer is what every consumer of ACS_HOOKS shares.
func (t Topology) consumer(durable, filter string) jetstream.ConsumerConfig {
	// MaxDeliver stays unlimited: an envelope is never dropped after a
	// number of attempts; bad input is dead-lettered by the processor.
	return jetstream.ConsumerConfig{Durable: durable, FilterSubject: filter,
		AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait: t.AckWait, MaxAckPending: t.MaxAckPending, MaxDeliver: -1, Replicas: t.Replicas}
}

// PullExpiry is how long a partition worker's pull request may wait:
// well within PinnedTTL, so that an idle owner asks again before the
// server unpins it.
func (t Topology) PullExpiry() time.Duration {
	return max(t.PinnedTTL/3, time.Second)
}

// IncompatibleError lists how an existing stream, bucket or consumer differs
// from what turnguard needs. turnguard does not edit an existing asset,
// except for the streams' retention limits and a legacy partition
// consumer's priority group (Ensure).
type IncompatibleError struct {
	Asset       string
	Differences []string
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("%s exists with an incompatible configuration: %s (turnguard does not change these settings of an existing asset; edit or delete it, or start turnguard with matching flags)",
		e.Asset, strings.Join(e.Differences, "; "))
}

// Ensure creates the streams, KV bucket and consumers that do not exist and
// checks the ones that do. An incompatible asset is an *IncompatibleError.
// It is EnsureLogged without a log.
func Ensure(ctx context.Context, js jetstream.JetStream, t Topology) error {
	_, err := Restore(ctx, js, t, 0, zerolog.Nop())
	return err
}

// EnsureLogged is Ensure, logging what it changes: the retention limits
// (max age, max bytes, discard policy) of an existing stream are set to
// the topology's, since they are the operator's to change at any restart.
func EnsureLogged(ctx context.Context, js jetstream.JetStream, t Topology, log zerolog.Logger) error {
	_, err := Restore(ctx, js, t, 0, log)
	return err
}

// Restore is EnsureLogged reporting what it created, for a processor that
// puts back what disappeared while it ran. seen is the highest
// ACS_HOOKS sequence the caller knows was used: an ACS_HOOKS created while
// states or decisions refer to sequences of an earlier one numbers its
// messages from above them all (hooksWatermark), so that no new envelope
// passes for one already applied.
func Restore(ctx context.Context, js jetstream.JetStream, t Topology, seen uint64, log zerolog.Logger) ([]string, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	var created []string
	var errs []error
	for _, want := range t.streams() {
		s, err := js.Stream(ctx, want.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			if want.Name == acs.HooksStream {
				high, err := hooksWatermark(ctx, js, seen)
				if err != nil {
					errs = append(errs, fmt.Errorf("create stream %s: find the highest sequence states and decisions refer to: %w", want.Name, err))
					continue
				}
				if high > 0 {
					want.FirstSeq = high + 1
				}
			}
			if _, err := js.CreateStream(ctx, want); err != nil {
				errs = append(errs, fmt.Errorf("create stream %s: %w", want.Name, err))
				continue
			}
			created = append(created, want.Name)
		case err != nil:
			errs = append(errs, fmt.Errorf("look up stream %s: %w", want.Name, err))
		default:
			info := s.CachedInfo()
			if err := compareStream(want, info.Config); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, updateRetention(ctx, js, want, info, log))
		}
	}
	for _, b := range t.buckets() {
		made, err := ensureBucket(ctx, js, b)
		if made {
			created = append(created, b.Bucket)
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return created, err
	}
	hooks, err := js.Stream(ctx, acs.HooksStream)
	if err != nil {
		return created, fmt.Errorf("look up stream %s: %w", acs.HooksStream, err)
	}
	for _, want := range t.consumers() {
		c, err := hooks.Consumer(ctx, want.Durable)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			if _, err := hooks.CreateConsumer(ctx, want); err != nil {
				errs = append(errs, fmt.Errorf("create consumer %s: %w", want.Durable, err))
				continue
			}
			created = append(created, acs.HooksStream+"/"+want.Durable)
		case err != nil:
			errs = append(errs, fmt.Errorf("look up consumer %s: %w", want.Durable, err))
		default:
			have := c.CachedInfo().Config
			if err := compareConsumer(want, have); err != nil {
				errs = append(errs, err)
				continue
			}
			if have.PriorityPolicy == jetstream.PriorityPolicyNone && want.PriorityPolicy != jetstream.PriorityPolicyNone {
				// The one edit turnguard makes to an asset it did not just
				// create: a partition consumer from before instances shared
				// partitions gets its priority group, keeping its ack floor.
				have.PriorityPolicy, have.PriorityGroups, have.PinnedTTL = want.PriorityPolicy, want.PriorityGroups, want.PinnedTTL
				if _, err := hooks.UpdateConsumer(ctx, have); err != nil {
					errs = append(errs, fmt.Errorf("add the priority group to consumer %s: %w", want.Durable, err))
				}
			}
		}
	}
	return created, errors.Join(errs...)
}

// ensureBucket creates the bucket if it does not exist, reporting whether
// it did, or checks it.
func ensureBucket(ctx context.Context, js jetstream.JetStream, want jetstream.KeyValueConfig) (bool, error) {
	kv, err := js.KeyValue(ctx, want.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		_, err := js.CreateKeyValue(ctx, want)
		if err == nil {
			return true, leaderReads(ctx, js, want.Bucket)
		}
		if !errors.Is(err, jetstream.ErrBucketExists) {
			return false, fmt.Errorf("create KV bucket %s: %w", want.Bucket, err)
		}
		// Another instance created it meanwhile (and may already have
		// turned direct gets off, so our create's config differed):
		// check it as found.
		if kv, err = js.KeyValue(ctx, want.Bucket); err != nil {
			return false, fmt.Errorf("look up KV bucket %s: %w", want.Bucket, err)
		}
	case err != nil:
		return false, fmt.Errorf("look up KV bucket %s: %w", want.Bucket, err)
	}
	if err := leaderReads(ctx, js, want.Bucket); err != nil {
		return false, err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return false, fmt.Errorf("KV bucket %s status: %w", want.Bucket, err)
	}
	var diffs []string
	diffs = differ(diffs, "history", want.History, uint8(st.History()))
	diffs = differ(diffs, "ttl", want.TTL, st.TTL())
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		diffs = differ(diffs, "replicas", want.Replicas, bs.StreamInfo().Config.Replicas)
	}
	return false, incompatible("KV bucket "+want.Bucket, diffs)
}

// leaderReads turns direct gets off on the state bucket's stream, so that
// every read of a session state is answered by the stream leader. A KV
// bucket allows direct gets, which any replica answers once it is 90%
// caught up: after a node restarts, it serves values older than the last
// acknowledged write. The revision check still fences every write, but a
// stale value read is taken for a rolled-back one (a false critical
// integrity alert, and with the session's history aged out, its steps
// refused), and a subagent's stale state can hide its taint from its
// parent. The cache makes reads rare, so what the leader costs is small.
func leaderReads(ctx context.Context, js jetstream.JetStream, bucket string) error {
	if bucket != acs.StateBucket {
		return nil // a stale member record costs a late reassignment at most
	}
	s, err := js.Stream(ctx, acs.KVStream(bucket))
	if err != nil {
		return fmt.Errorf("look up the stream of KV bucket %s: %w", bucket, err)
	}
	cfg := s.CachedInfo().Config
	if !cfg.AllowDirect {
		return nil
	}
	cfg.AllowDirect = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("turn off direct gets on KV bucket %s: %w", bucket, err)
	}
	return nil
}

// retentionChanges lists how an existing stream's retention differs from
// want's.
func retentionChanges(want, have jetstream.StreamConfig) []string {
	var diffs []string
	if want.MaxAge != have.MaxAge {
		diffs = append(diffs, fmt.Sprintf("max age %s → %s", ageText(have.MaxAge), ageText(want.MaxAge)))
	}
	if serverBytes(want.MaxBytes) != serverBytes(have.MaxBytes) {
		diffs = append(diffs, fmt.Sprintf("max bytes %s → %s", bytesText(have.MaxBytes), bytesText(want.MaxBytes)))
	}
	diffs = differ(diffs, "discard", want.Discard, have.Discard)
	return diffs
}

// updateRetention gives an existing stream want's retention limits, the
// only stream settings turnguard changes. Lower limits remove what the
// stream holds beyond them at once (ACS_HOOKS, discarding new, removes
// nothing for its size: it refuses publishes until enough has aged out).
func updateRetention(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig, info *jetstream.StreamInfo, log zerolog.Logger) error {
	changes := retentionChanges(want, info.Config)
	if len(changes) == 0 {
		return nil
	}
	cfg := info.Config
	cfg.MaxAge, cfg.MaxBytes, cfg.Discard = want.MaxAge, want.MaxBytes, want.Discard
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("update the retention of stream %s (%s): %w", want.Name, strings.Join(changes, ", "), err)
	}
	log.Warn().Str("stream", want.Name).Strs("changes", changes).
		Msg("stream retention changed to the configured limits; messages beyond them are removed")
	if want.Discard == jetstream.DiscardNew && want.MaxBytes > 0 && info.State.Bytes >= uint64(want.MaxBytes) {
		log.Error().Str("stream", want.Name).Uint64("bytes", info.State.Bytes).Int64("max_bytes", want.MaxBytes).
			Msg("the stream already holds its new size limit: publishes to it are refused until messages age out or the limit is raised")
	}
	return nil
}

func ageText(d time.Duration) string {
	if d <= 0 {
		return "unlimited"
	}
	return d.String()
}

func bytesText(b int64) string {
	if b <= 0 {
		return "unlimited"
	}
	return strconv.FormatInt(b, 10)
}

func compareStream(want, have jetstream.StreamConfig) error {
	var diffs []string
	if !slices.Equal(want.Subjects, have.Subjects) {
		diffs = append(diffs, fmt.Sprintf("subjects %v, need %v", have.Subjects, want.Subjects))
	}
	switch {
	case want.SubjectTransform == nil && have.SubjectTransform != nil:
		diffs = append(diffs, fmt.Sprintf("subject transform %s → %s, need none", have.SubjectTransform.Source, have.SubjectTransform.Destination))
	case want.SubjectTransform != nil && (have.SubjectTransform == nil || *have.SubjectTransform != *want.SubjectTransform):
		h := "none"
		if have.SubjectTransform != nil {
			h = have.SubjectTransform.Source + " → " + have.SubjectTransform.Destination
		}
		diffs = append(diffs, fmt.Sprintf("subject transform %s, need %s → %s (is --partitions the one the stream was created with?)", h, want.SubjectTransform.Source, want.SubjectTransform.Destination))
	}
	diffs = differ(diffs, "retention", want.Retention, have.Retention)
	diffs = differ(diffs, "max message size", want.MaxMsgSize, have.MaxMsgSize)
	diffs = differ(diffs, "replicas", want.Replicas, have.Replicas)
	if have.Duplicates < want.Duplicates {
		diffs = append(diffs, fmt.Sprintf("duplicate window %s, need at least %s", have.Duplicates, want.Duplicates))
	}
	return incompatible("stream "+want.Name, diffs)
}

func compareConsumer(want, have jetstream.ConsumerConfig) error {
	var diffs []string
	diffs = differ(diffs, "filter subject", want.FilterSubject, have.FilterSubject)
	diffs = differ(diffs, "ack policy", want.AckPolicy, have.AckPolicy)
	diffs = differ(diffs, "deliver policy", want.DeliverPolicy, have.DeliverPolicy)
	diffs = differ(diffs, "max deliver", want.MaxDeliver, have.MaxDeliver)
	// No priority policy at all is upgraded by Ensure; another one is not
	// turnguard's.
	if have.PriorityPolicy != jetstream.PriorityPolicyNone {
		diffs = differ(diffs, "priority policy", want.PriorityPolicy, have.PriorityPolicy)
		if !slices.Equal(want.PriorityGroups, have.PriorityGroups) {
			diffs = append(diffs, fmt.Sprintf("priority groups %v, need %v", have.PriorityGroups, want.PriorityGroups))
		}
	}
	return incompatible("consumer "+acs.HooksStream+"/"+want.Durable, diffs)
}

func differ[T comparable](diffs []string, what string, want, have T) []string {
	if want != have {
		diffs = append(diffs, fmt.Sprintf("%s %v, need %v", what, have, want))
	}
	return diffs
}

func incompatible(asset string, diffs []string) error {
	if len(diffs) == 0 {
		return nil
	}
	return &IncompatibleError{Asset: asset, Differences: diffs}
}
