// Package acs holds the Agent Control Standard (ACS v0.1.0) wire model that
// turnguard speaks: request and response envelopes, the method table with the
// dispositions each hook permits, the JSON-RPC/ACS error codes, and the NATS
// subject layout that carries envelopes.
//
// It also holds what ACS hashes and signs: the RFC 8785 canonical form, the
// ContextEntry hash chain, and HMAC-SHA256 signatures with per-session keys.
// It does no I/O beyond reading a keys file, so every other package — the
// pure decision core included — can share it.
package acs
