package stream

import (
	"errors"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// TestGroupablePrefix: a batch goes to a group up to its first
// subagentStop; an unroutable message (no hook to read) does not stop it.
func TestGroupablePrefix(t *testing.T) {
	in := func(hook string) inbound { return inbound{route: acs.Route{Hook: hook}} }
	bad := inbound{routeErr: errors.New("malformed"), route: acs.Route{Hook: "subagentStop"}}
	for _, tc := range []struct {
		name string
		ins  []inbound
		want int
	}{
		{"empty", nil, 0},
		{"no stop", []inbound{in("turnStart"), in("toolCallRequest")}, 2},
		{"stop first", []inbound{in("subagentStop"), in("turnStart")}, 0},
		{"stop inside", []inbound{in("turnStart"), in("toolCallRequest"), in("subagentStop"), in("turnEnd")}, 2},
		{"stop last", []inbound{in("turnStart"), in("subagentStop")}, 1},
		{"unroutable", []inbound{bad, in("turnEnd")}, 2},
	} {
		if got := groupablePrefix(tc.ins); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
