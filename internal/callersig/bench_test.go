package callersig_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/turnguard/turnguard/internal/callersig"
)

// What a caller signature costs each envelope: signing as pkg/client
// does, through the connection's signature callback (which reads the
// credentials file each time), and the processor's verification.
func BenchmarkSign(b *testing.B) {
	const subject = "acs.hooks.acme.2f4c9a51-0d7e-4c3b-9a55-0c8a3c0f1b7e.toolCallRequest"
	body := make([]byte, 1200)
	b.Run("credentials file", func(b *testing.B) {
		user, _ := nkeys.CreateUser()
		pub, _ := user.PublicKey()
		seed, _ := user.Seed()
		account, _ := nkeys.CreateAccount()
		uc := jwt.NewUserClaims(pub)
		token, err := uc.Encode(account)
		if err != nil {
			b.Fatal(err)
		}
		creds, err := jwt.FormatUserConfig(token, seed)
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(b.TempDir(), "agent.creds")
		if err := os.WriteFile(path, creds, 0o600); err != nil {
			b.Fatal(err)
		}
		var o nats.Options
		if err := nats.UserCredentials(path)(&o); err != nil {
			b.Fatal(err)
		}
		s := callersig.Signer{Key: pub, Sign: o.SignatureCB}
		h := nats.Header{}
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Set(h, subject, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	_, s := newUser(b)
	h := nats.Header{}
	b.Run("key in memory", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Set(h, subject, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if c, _ := callersig.Caller(h, subject, body); c == "" {
				b.Fatal("no caller")
			}
		}
	})
}
