// Package stream is the processor: it consumes ACS_HOOKS with one worker
// per partition it owns and turns each batch of envelopes into decisions,
// alerts and dead letters exactly once — every touched session's state is
// written with its outbox, compare-and-set on its revision (the fence
// between instances), before the outbox is published and the batch acked.
// Around the workers it recovers after a restart or a delivery gap, shares
// the partitions among instances (membership, pinned consumers), rebuilds
// a session whose stored value does not verify from its envelopes, puts
// back assets deleted while it runs, and reports whether it is ready.
//
// The deciding is internal/core/guardian's; this package is the I/O and
// the ordering around it. docs/ARCHITECTURE.md gives the exactly-once
// argument; worker.go and apply.go hold its details as comments.
package stream
