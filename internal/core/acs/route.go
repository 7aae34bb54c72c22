package acs

import (
	"fmt"
	"strconv"
	"strings"
)

// Subject layout of turnguard's external contract (docs/CONFORMANCE.md "External
// contract"). Inbound envelopes are published to
// acs.hooks.<tenant>.<session_id>.<hook>; the ACS_HOOKS stream rewrites that
// on ingest to acs.part.<partition>.<tenant>.<session_id>.<hook> so that one
// consumer per partition sees every envelope of a session in order.
const (
	InboundPrefix     = "acs.hooks"
	PartitionedPrefix = "acs.part"
	DecisionsPrefix   = "acs.decisions"
	AlertsPrefix      = "acs.alerts"
	DLQPrefix         = "acs.dlq"
)

// OutputPrefixes are the subjects turnguard publishes on: decisions,
// alerts and dead letters. A stored outbox may only hold publications under
// them (IsOutputSubject): the processor publishes what it finds in the state
// bucket, and must not become a relay to any other subject.
var OutputPrefixes = []string{DecisionsPrefix, AlertsPrefix, DLQPrefix}

// IsOutputSubject reports whether subject lies under one of OutputPrefixes.
func IsOutputSubject(subject string) bool {
	for _, p := range OutputPrefixes {
		if rest, ok := strings.CutPrefix(subject, p+"."); ok && rest != "" {
			return true
		}
	}
	return false
}

// UnroutedTenant is the dead-letter tenant token for messages whose subject
// names no usable tenant.
const UnroutedTenant = "_unrouted"

// Route is where an inbound envelope was published: the tenant, session and
// hook its subject names, and the partition the stream assigned.
type Route struct {
	Partition int
	Tenant    string
	SessionID string
	Hook      string
}

// SessionKey returns the KV key of the route's session state.
func (r Route) SessionKey() string { return SessionKey(r.Tenant, r.SessionID) }

// SessionKey returns the KV key of a session's state: <tenant>.<session_id>.
func SessionKey(tenant, sessionID string) string { return tenant + "." + sessionID }

// InboundSubject is the subject a framework publishes an envelope to.
func InboundSubject(tenant, sessionID, hook string) string {
	return InboundPrefix + "." + tenant + "." + sessionID + "." + hook
}

// DecisionSubject is the subject a session's decisions are published to.
func DecisionSubject(tenant, sessionID string) string {
	return DecisionsPrefix + "." + tenant + "." + sessionID
}

// DLQSubject is the dead-letter subject of a tenant.
func DLQSubject(tenant string) string { return DLQPrefix + "." + tenant }

// PartitionFilter is the filter subject of one partition's consumer.
func PartitionFilter(p int) string {
	return PartitionedPrefix + "." + strconv.Itoa(p) + ".*.*.*"
}

// StoredFilter is the filter subject of stored envelopes of a tenant,
// session and hook in any partition; "*" stands for any of them.
func StoredFilter(tenant, sessionID, hook string) string {
	return PartitionedPrefix + ".*." + tenant + "." + sessionID + "." + hook
}

// ParsePartitioned parses a stored (partitioned) subject
// acs.part.<p>.<tenant>.<session_id>.<hook>.
func ParsePartitioned(subject string) (Route, error) {
	rest, ok := strings.CutPrefix(subject, PartitionedPrefix+".")
	if !ok {
		return Route{}, fmt.Errorf("subject %q is not under %s", subject, PartitionedPrefix)
	}
	ptok, rest, _ := strings.Cut(rest, ".")
	p, err := strconv.Atoi(ptok)
	if err != nil || p < 0 {
		return Route{}, fmt.Errorf("subject %q: partition token %q is not a partition number", subject, ptok)
	}
	r, err := parseRoute(subject, rest)
	r.Partition = p
	return r, err
}

// ParseInbound parses an inbound subject acs.hooks.<tenant>.<session_id>.<hook>.
// The partition is left 0: only the stream assigns it.
func ParseInbound(subject string) (Route, error) {
	rest, ok := strings.CutPrefix(subject, InboundPrefix+".")
	if !ok {
		return Route{}, fmt.Errorf("subject %q is not under %s", subject, InboundPrefix)
	}
	return parseRoute(subject, rest)
}

// parseRoute parses the <tenant>.<session_id>.<hook> tail of a subject.
func parseRoute(subject, tail string) (Route, error) {
	tok := strings.Split(tail, ".")
	if len(tok) != 3 {
		return Route{}, fmt.Errorf("subject %q does not end in <tenant>.<session_id>.<hook>", subject)
	}
	r := Route{Tenant: tok[0], SessionID: tok[1], Hook: tok[2]}
	if err := CheckTenant(r.Tenant); err != nil {
		return Route{}, fmt.Errorf("subject %q: %w", subject, err)
	}
	if !isKeyToken(r.SessionID) {
		return Route{}, fmt.Errorf("subject %q: session token %q may only hold letters, digits, '-', '_' and '='", subject, r.SessionID)
	}
	return r, nil
}

// TenantOf returns the tenant token of an inbound or partitioned subject when
// it names a usable one, else UnroutedTenant. Dead letters use it to file
// messages whose subject is otherwise unusable.
func TenantOf(subject string) string {
	tok := strings.Split(subject, ".")
	var t string
	switch {
	case strings.HasPrefix(subject, PartitionedPrefix+".") && len(tok) > 3:
		t = tok[3]
	case strings.HasPrefix(subject, InboundPrefix+".") && len(tok) > 2:
		t = tok[2]
	}
	if CheckTenant(t) != nil {
		return UnroutedTenant
	}
	return t
}

// CheckTenant reports whether t can name a tenant: it becomes a subject token
// and the first part of a KV key, so it may hold letters, digits, '-' and '_'.
func CheckTenant(t string) error {
	if t == "" || t == UnroutedTenant {
		return fmt.Errorf("tenant token %q is reserved or empty", t)
	}
	for _, c := range t {
		if !isAlnum(c) && c != '-' && c != '_' {
			return fmt.Errorf("tenant token %q may only hold letters, digits, '-' and '_'", t)
		}
	}
	return nil
}

func isKeyToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !isAlnum(c) && c != '-' && c != '_' && c != '=' {
			return false
		}
	}
	return true
}

func isAlnum(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// InboundOf returns the subject a stored message was originally published
// to: a partitioned subject loses its partition token, anything else is
// returned as is.
func InboundOf(stored string) string {
	rest, ok := strings.CutPrefix(stored, PartitionedPrefix+".")
	if !ok {
		return stored
	}
	_, tail, ok := strings.Cut(rest, ".")
	if !ok {
		return stored
	}
	return InboundPrefix + "." + tail
}

// CheckSession reports whether s can name a session in a subject and a KV
// key: letters, digits, '-', '_' and '='.
func CheckSession(s string) error {
	if !isKeyToken(s) {
		return fmt.Errorf("session id %q may only hold letters, digits, '-', '_' and '='", s)
	}
	return nil
}
