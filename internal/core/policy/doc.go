// Package policy is the rule engine: it parses rule files (YAML with CEL
// conditions; the default pack and the format's documentation are rules/),
// checks and compiles them into one Set — the tool catalog, taint labels
// and their windows, thresholds, each hook's rules, the conditions' cost
// bounds — and evaluates a Set on an envelope already applied to its
// session: which rules match, and what that does to the session's rule
// state (taints, threshold counters, provenance, argument lineage).
//
// It is part of the pure core: evaluating reads nothing but its arguments,
// so that replay and the rule tests decide as the processor does; only
// loading rule files reads the disk. Source holds the Set in force, which
// a reload swaps whole between batches.
package policy
