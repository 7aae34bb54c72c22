package natsauth_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/natsauth"
)

// BenchmarkPublishToHooks is what the accounts cost an agent: a
// synchronous JetStream publish of a 2 KiB envelope to ACS_HOOKS through
// the tenant account's service import (agent), against the same publish
// from inside TURNGUARD (admin, as loadgen publishes). Each publish waits
// for its acknowledgement, as pkg/client does.
func BenchmarkPublishToHooks(b *testing.B) {
	connect := newWorld(b)
	envelope := bytes.Repeat([]byte("x"), 2048)
	for _, bc := range []struct {
		name string
		user natsauth.User
	}{
		{"agent_through_import", natsauth.User{Role: natsauth.RoleAgent, Tenant: "acme"}},
		{"admin_same_account", natsauth.User{Role: natsauth.RoleAdmin}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := connect(bc.user)
			subject := acs.InboundPrefix + ".acme.bench-" + bc.name + ".toolCallRequest"
			ctx := context.Background()
			b.SetBytes(int64(len(envelope)))
			for b.Loop() {
				if _, err := c.js.Publish(ctx, subject, envelope); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
