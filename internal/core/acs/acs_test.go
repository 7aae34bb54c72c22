package acs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/turnguard/turnguard/internal/core/acs"
)

func TestMethodTable(t *testing.T) {
	methods := acs.Methods()
	if len(methods) != 22 {
		t.Fatalf("%d methods, want the 19 steps/* hooks plus agbom/snapshot, agbom/changed and system/ping", len(methods))
	}
	steps := 0
	for _, m := range methods {
		if strings.HasPrefix(m.Method, "steps/") {
			steps++
		}
		if len(m.Permitted) == 0 || !m.Permits(acs.Allow) {
			t.Errorf("%s: every hook permits allow", m.Method)
		}
		if acs.LookupMethod(m.Method) == nil || acs.HookToken(m.Method) != m.Hook {
			t.Errorf("%s: lookup or hook token broken", m.Method)
		}
	}
	if steps != 19 {
		t.Errorf("%d steps/* hooks, want 19", steps)
	}
	tests := []struct {
		method string
		want   []acs.Disposition
	}{
		{"steps/toolCallRequest", []acs.Disposition{acs.Deny, acs.Defer, acs.Ask, acs.Modify, acs.Allow}},
		{"steps/postCompact", []acs.Disposition{acs.Modify, acs.Allow}},
		{"steps/turnEnd", []acs.Disposition{acs.Allow}},
		{"steps/sessionEnd", []acs.Disposition{acs.Allow}},
		{"steps/subagentStop", []acs.Disposition{acs.Allow}},
		{"steps/skillUnload", []acs.Disposition{acs.Allow}},
		{"steps/turnStart", []acs.Disposition{acs.Deny, acs.Allow}},
		{"system/ping", []acs.Disposition{acs.Allow}},
	}
	for _, tc := range tests {
		m := acs.LookupMethod(tc.method)
		for _, d := range []acs.Disposition{acs.Allow, acs.Deny, acs.Modify, acs.Ask, acs.Defer} {
			want := false
			for _, w := range tc.want {
				want = want || w == d
			}
			if m.Permits(d) != want {
				t.Errorf("%s permits %s: %v, want %v", tc.method, d, m.Permits(d), want)
			}
		}
	}
	if acs.LookupMethod("steps/teleport") != nil || acs.LookupMethod("handshake/hello") != nil {
		t.Error("unknown methods must not be found")
	}
	// Methods returns a copy: changing it changes nothing.
	methods[0].Permitted = nil
	if len(acs.Methods()[0].Permitted) == 0 {
		t.Error("Methods exposed the table itself")
	}
}

func TestHookToken(t *testing.T) {
	for method, want := range map[string]string{
		"steps/turnStart": "turnStart", "agbom/snapshot": "agbom", "system/ping": "system",
		"handshake/hello": "handshake", "protocols/MCP/tools/call": "protocols", "wrapped:mcp-2025-06-18/tools/call": "wrapped",
	} {
		if got := acs.HookToken(method); got != want {
			t.Errorf("HookToken(%q) = %q, want %q", method, got, want)
		}
	}
}

func TestParseSubjects(t *testing.T) {
	tests := []struct {
		subject string
		want    acs.Route
		err     string
	}{
		{"acs.part.3.default.s-1.turnStart", acs.Route{Partition: 3, Tenant: "default", SessionID: "s-1", Hook: "turnStart"}, ""},
		{"acs.part.x.default.s.turnStart", acs.Route{}, "not a partition number"},
		{"acs.part.3.default.s", acs.Route{}, "<tenant>.<session_id>.<hook>"},
		{"acs.part.3.a=b.s.h", acs.Route{}, "tenant token"},
		{"acs.part.3._unrouted.s.h", acs.Route{}, "reserved"},
		{"acs.part.3.t.s!.h", acs.Route{}, "session token"},
		{"acs.hooks.t.s.h", acs.Route{}, "not under acs.part"},
	}
	for _, tc := range tests {
		got, err := acs.ParsePartitioned(tc.subject)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %+v, %v; want %+v", tc.subject, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one mentioning %q", tc.subject, err, tc.err)
		}
	}
	r, err := acs.ParseInbound("acs.hooks.acme.s.toolCallRequest")
	if err != nil || r != (acs.Route{Tenant: "acme", SessionID: "s", Hook: "toolCallRequest"}) || r.SessionKey() != "acme.s" {
		t.Errorf("ParseInbound: %+v, %v", r, err)
	}
	for stored, want := range map[string]string{
		"acs.part.12.acme.s.turnEnd": "acs.hooks.acme.s.turnEnd",
		"acs.hooks.broken":           "acs.hooks.broken",
	} {
		if got := acs.InboundOf(stored); got != want {
			t.Errorf("InboundOf(%q) = %q, want %q", stored, got, want)
		}
	}
	for subject, want := range map[string]string{
		"acs.part.1.acme.s.h": "acme", "acs.hooks.acme.s.h": "acme", "acs.hooks.a=b.s.h": acs.UnroutedTenant, "acs.hooks": acs.UnroutedTenant,
	} {
		if got := acs.TenantOf(subject); got != want {
			t.Errorf("TenantOf(%q) = %q, want %q", subject, got, want)
		}
	}
}

func TestErrorMatching(t *testing.T) {
	err := error(&acs.Error{Code: acs.CodeInvalidParams, Reason: acs.ReasonPayloadInvalid, Message: "bad",
		Violations: []acs.Violation{{Pointer: "/params/payload/x", Message: "missing"}}})
	if !errors.Is(err, &acs.Error{Code: acs.CodeInvalidParams}) || errors.Is(err, &acs.Error{Code: acs.CodeParseError}) ||
		errors.Is(err, &acs.Error{Code: acs.CodeInvalidParams, Reason: acs.ReasonTooLarge}) {
		t.Fatal("errors.Is does not match by code and reason")
	}
	if s := err.Error(); !strings.Contains(s, "INVALID_PARAMS (-32602)") || !strings.Contains(s, "/params/payload/x: missing") {
		t.Fatalf("error text %q", s)
	}
	rpc := err.(*acs.Error).RPC("steps/x")
	if rpc.Code != -32602 || rpc.Data.Reason != acs.ReasonPayloadInvalid || rpc.Data.Method != "steps/x" || len(rpc.Data.Violations) != 1 {
		t.Fatalf("RPC form %+v", rpc)
	}
}

// FuzzParseSubject: subjects come from publishers; parsing never panics and
// a parsed route always rebuilds a subject that parses to itself.
func FuzzParseSubject(f *testing.F) {
	for _, s := range []string{"acs.part.3.default.s.turnStart", "acs.hooks.t.s.h", "acs.part..", "acs.part.-1.a.b.c", "acs.part.99999999999999999999.a.b.c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		r, err := acs.ParsePartitioned(subject)
		_ = acs.TenantOf(subject)
		_ = acs.InboundOf(subject)
		if err != nil {
			return
		}
		back, err := acs.ParseInbound(acs.InboundSubject(r.Tenant, r.SessionID, r.Hook))
		if err != nil || back.Tenant != r.Tenant || back.SessionID != r.SessionID || back.Hook != r.Hook {
			t.Fatalf("%q parsed to %+v but does not round-trip: %+v, %v", subject, r, back, err)
		}
	})
}

// TestStoredFilter checks the filters replay reads ACS_HOOKS with match the
// subjects the partition transform stores, in any partition.
func TestStoredFilter(t *testing.T) {
	stored := "acs.part.3.default.s-1.turnStart"
	tests := []struct {
		tenant, session, hook string
		match                 bool
	}{
		{"default", "s-1", "*", true},
		{"default", "*", "*", true},
		{"default", "*", "turnStart", true},
		{"default", "*", "subagentStart", false},
		{"default", "s-2", "*", false},
		{"acme", "*", "*", false},
	}
	for _, tt := range tests {
		filter := acs.StoredFilter(tt.tenant, tt.session, tt.hook)
		if got := server.SubjectMatchesFilter(stored, filter); got != tt.match {
			t.Errorf("%s matches %s: %v, want %v", filter, stored, got, tt.match)
		}
	}
}
