package acs

import "fmt"

// Names of turnguard's JetStream assets (docs/CONFORMANCE.md "External contract"). They
// are part of the wire contract as much as the subjects are, and live here
// rather than with the processor (internal/stream) so that everything that
// reads or writes them — replay, the gateway, the Go client, loadgen — can
// name them without importing the processor. Plain strings: this package
// does not import NATS.
const (
	HooksStream     = "ACS_HOOKS"
	DecisionsStream = "ACS_DECISIONS"
	AlertsStream    = "ACS_ALERTS"
	DLQStream       = "ACS_DLQ"
	StateBucket     = "ACS_TURNSTATE"
	// MembersBucket holds one key per live processor instance, refreshed
	// by its heartbeat and expired by the bucket's TTL when it stops.
	MembersBucket = "ACS_PROCESSORS"
	// HandshakeBucket is the KV bucket of the HTTP endpoint's negotiated
	// sessions. It is durable so that a restart does not turn every
	// session of an adapter that cached its ServerHello into -32003
	// answers, which the ACS adapters pass to their failure posture (fail
	// open by default).
	HandshakeBucket = "ACS_HANDSHAKES"
	// PartitionGroup is the priority group every partition consumer pins
	// one client of: the instance that owns the partition.
	PartitionGroup = "turnguard"
	// UnroutedConsumer takes messages under acs.hooks.> that the partition
	// transform did not rewrite because their subject has the wrong shape.
	UnroutedConsumer = "turnguard-unrouted"
)

// HooksMaxMsgSize is the ACS_HOOKS stream's per-message limit, and so the
// largest --max-envelope-bytes.
const HooksMaxMsgSize = 1 << 20

// PartitionConsumer is the durable name of partition p's consumer.
func PartitionConsumer(p int) string { return fmt.Sprintf("turnguard-p%03d", p) }

// KVStream is the name of the stream that backs a JetStream KV bucket.
func KVStream(bucket string) string { return "KV_" + bucket }

// KVSubject is the subject a JetStream KV bucket stores key under: what a
// write publishes to, and what a read of the bucket's stream filters on.
func KVSubject(bucket, key string) string { return "$KV." + bucket + "." + key }
