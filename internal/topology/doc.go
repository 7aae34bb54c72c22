// Package topology is the shape of the JetStream assets turnguard needs:
// the streams ACS_HOOKS (partitioned by a subject transform), ACS_DECISIONS,
// ACS_ALERTS and ACS_DLQ, the state, member and handshake buckets, and the
// consumers of ACS_HOOKS (one pinned durable consumer per partition, one
// for malformed subjects). Ensure creates what is missing and refuses an
// existing asset of another shape, changing only the streams' retention
// (the operator's to change at any restart) and a legacy partition
// consumer's priority group; Restore puts back what disappeared while the
// processor ran, numbering a recreated ACS_HOOKS above every sequence
// still referred to.
package topology
