package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/acs"
)

// Names of turnguard's JetStream assets (README "External contract").
const (
	HooksStream     = "ACS_HOOKS"
	DecisionsStream = "ACS_DECISIONS"
	AlertsStream    = "ACS_ALERTS"
	DLQStream       = "ACS_DLQ"
	StateBucket     = "ACS_TURNSTATE"
	// MembersBucket holds one key per live processor instance, refreshed
	// by its heartbeat and expired by the bucket's TTL when it stops.
	MembersBucket = "ACS_PROCESSORS"
	// PartitionGroup is the priority group every partition consumer pins
	// one client of: the instance that owns the partition.
	PartitionGroup = "turnguard"
	// UnroutedConsumer takes messages under acs.hooks.> that the partition
	// transform did not rewrite because their subject has the wrong shape.
	UnroutedConsumer = "turnguard-unrouted"
)

// HooksMaxMsgSize is the ACS_HOOKS stream's per-message limit.
const HooksMaxMsgSize = 1 << 20

// Topology is the shape of the streams, bucket and consumers turnguard
// needs. Ensure creates what is missing and refuses what is incompatible.
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
}

// DefaultTopology is what the processor runs with unless told otherwise.
func DefaultTopology() Topology {
	return Topology{
		Partitions:          16,
		Replicas:            1,
		SessionTTL:          24 * time.Hour,
		DecisionDedupWindow: 10 * time.Minute,
		AckWait:             30 * time.Second,
		MaxAckPending:       1024,
		PinnedTTL:           15 * time.Second,
		MemberTTL:           5 * time.Second,
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
	if t.MaxAckPending < 1 {
		errs = append(errs, fmt.Errorf("max ack pending must be positive, not %d", t.MaxAckPending))
	}
	return errors.Join(errs...)
}

// PartitionConsumer is the durable consumer name of partition p.
func PartitionConsumer(p int) string { return fmt.Sprintf("turnguard-p%03d", p) }

// PartitionTransform is the ACS_HOOKS subject transform: it moves
// acs.hooks.<tenant>.<session>.<hook> to acs.part.<p>.<tenant>.<session>.<hook>,
// p computed by NATS from tenant and session. The destination lies outside
// acs.hooks.>, so nothing published directly can pose as partitioned, and
// everything left under acs.hooks.> is a malformed subject.
func PartitionTransform(partitions int) *jetstream.SubjectTransformConfig {
	return &jetstream.SubjectTransformConfig{
		Source:      acs.InboundPrefix + ".*.*.*",
		Destination: acs.PartitionedPrefix + ".{{partition(" + strconv.Itoa(partitions) + ",1,2)}}.{{wildcard(1)}}.{{wildcard(2)}}.{{wildcard(3)}}",
	}
}

func (t Topology) streams() []jetstream.StreamConfig {
	base := func(name, desc, subject string) jetstream.StreamConfig {
		// MaxMsgSize -1 (unlimited) is what the server stores for "not set".
		return jetstream.StreamConfig{Name: name, Description: desc, Subjects: []string{subject + ".>"},
			Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage, Replicas: t.Replicas, MaxMsgSize: -1}
	}
	hooks := base(HooksStream, "turnguard: inbound ACS hook envelopes", acs.InboundPrefix)
	hooks.SubjectTransform = PartitionTransform(t.Partitions)
	hooks.MaxMsgSize = HooksMaxMsgSize
	hooks.Duplicates = 2 * time.Minute
	decisions := base(DecisionsStream, "turnguard: ACS response envelopes, one per inbound envelope", acs.DecisionsPrefix)
	decisions.Duplicates = t.DecisionDedupWindow
	alerts := base(AlertsStream, "turnguard: alerts (OCSF Detection Findings)", acs.AlertsPrefix)
	alerts.Duplicates = t.DecisionDedupWindow
	dlq := base(DLQStream, "turnguard: refused input, original bytes", acs.DLQPrefix)
	dlq.Duplicates = 24 * time.Hour
	return []jetstream.StreamConfig{hooks, decisions, alerts, dlq}
}

func (t Topology) buckets() []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		{Bucket: StateBucket, Description: "turnguard: ACS session and turn state",
			History: 1, TTL: t.SessionTTL, Storage: jetstream.FileStorage, Replicas: t.Replicas},
		// Memory storage: membership is only ever as old as MemberTTL.
		{Bucket: MembersBucket, Description: "turnguard: live processor instances and the partitions they hold",
			History: 1, TTL: t.MemberTTL, Storage: jetstream.MemoryStorage, Replicas: t.Replicas},
	}
}

func (t Topology) consumers() []jetstream.ConsumerConfig {
	var cs []jetstream.ConsumerConfig
	mk := func(name, filter, desc string) jetstream.ConsumerConfig {
		// MaxDeliver stays unlimited: an envelope is never dropped after a
		// number of attempts; bad input is dead-lettered by the processor.
		return jetstream.ConsumerConfig{Durable: name, Description: desc, FilterSubject: filter,
			AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
			AckWait: t.AckWait, MaxAckPending: t.MaxAckPending, MaxDeliver: -1, Replicas: t.Replicas}
	}
	for p := range t.Partitions {
		c := mk(PartitionConsumer(p), acs.PartitionFilter(p), fmt.Sprintf("turnguard: partition %d of %d", p, t.Partitions))
		// One pinned client per partition: the server delivers to one
		// instance at a time, which keeps a partition in stream order
		// across instances; the KV revision check fences the rest.
		c.PriorityPolicy = jetstream.PriorityPolicyPinned
		c.PriorityGroups = []string{PartitionGroup}
		c.PinnedTTL = t.PinnedTTL
		cs = append(cs, c)
	}
	cs = append(cs, mk(UnroutedConsumer, acs.InboundPrefix+".>", "turnguard: malformed subjects, dead-lettered"))
	return cs
}

// IncompatibleError lists how an existing stream, bucket or consumer differs
// from what turnguard needs. turnguard never edits an existing asset.
type IncompatibleError struct {
	Asset       string
	Differences []string
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("%s exists with an incompatible configuration: %s (turnguard does not change existing assets; edit or delete it, or start turnguard with matching flags)",
		e.Asset, strings.Join(e.Differences, "; "))
}

// Ensure creates the streams, KV bucket and consumers that do not exist and
// checks the ones that do. An incompatible asset is an *IncompatibleError.
func Ensure(ctx context.Context, js jetstream.JetStream, t Topology) error {
	_, err := ensure(ctx, js, t, 0)
	return err
}

// ensure is Ensure reporting what it created. seen is the highest
// ACS_HOOKS sequence the caller knows was used: an ACS_HOOKS created while
// states or decisions refer to sequences of an earlier one numbers its
// messages from above them all (hooksWatermark), so that no new envelope
// passes for one already applied.
func ensure(ctx context.Context, js jetstream.JetStream, t Topology, seen uint64) ([]string, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	var created []string
	var errs []error
	for _, want := range t.streams() {
		s, err := js.Stream(ctx, want.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			if want.Name == HooksStream {
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
			errs = append(errs, compareStream(want, s.CachedInfo().Config))
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
	hooks, err := js.Stream(ctx, HooksStream)
	if err != nil {
		return created, fmt.Errorf("look up stream %s: %w", HooksStream, err)
	}
	for _, want := range t.consumers() {
		c, err := hooks.Consumer(ctx, want.Durable)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			if _, err := hooks.CreateConsumer(ctx, want); err != nil {
				errs = append(errs, fmt.Errorf("create consumer %s: %w", want.Durable, err))
				continue
			}
			created = append(created, HooksStream+"/"+want.Durable)
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
		if _, err := js.CreateKeyValue(ctx, want); err != nil {
			return false, fmt.Errorf("create KV bucket %s: %w", want.Bucket, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("look up KV bucket %s: %w", want.Bucket, err)
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
	return incompatible("consumer "+HooksStream+"/"+want.Durable, diffs)
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
