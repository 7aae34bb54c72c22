// Package embedded runs the NATS JetStream server inside a turnguard
// process: the processor's default mode, replay on a data directory, and
// loadgen's embedded target. Start runs a single node with its store under
// the data directory, which one process at a time may hold (a lock file:
// two servers on one store would corrupt it), with turnguard's payload and
// slow-consumer bounds and, when asked, its authentication and TLS; User
// mints an in-process client's credentials on the spot.
package embedded
