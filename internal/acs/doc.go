// Package acs holds the Agent Control Standard (ACS v0.1.0) wire model that
// turnguard speaks: request and response envelopes, the method table with the
// dispositions each hook permits, the JSON-RPC/ACS error codes, and the NATS
// subject layout that carries envelopes.
//
// It has no I/O and no dependencies beyond the standard library, so every other
// package — the pure decision core included — can share it.
package acs
