package natsauth_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"

	"github.com/turnguard/turnguard/internal/embedded"
	"github.com/turnguard/turnguard/internal/natsauth"
)

// TestLayout1IsUpgraded: an authority written by an earlier version (one
// account for every role) is upgraded when loaded. Credentials it issued
// — agent and security ones, which could write through replies — are
// refused from then on; credentials minted again work, each in its
// account.
func TestLayout1IsUpgraded(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "auth")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	seeds := map[string]nkeys.KeyPair{}
	for file, mk := range map[string]func() (nkeys.KeyPair, error){"operator.nk": nkeys.CreateOperator, "system-account.nk": nkeys.CreateAccount, "account.nk": nkeys.CreateAccount} {
		kp, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := kp.Seed()
		if err := os.WriteFile(filepath.Join(dir, file), seed, 0o600); err != nil {
			t.Fatal(err)
		}
		seeds[file] = kp
	}
	// The old layout's agent credential: signed by the one account's key.
	legacy := func(u natsauth.User) []byte {
		ukp, _ := nkeys.CreateUser()
		pub, _ := ukp.PublicKey()
		uc := jwt.NewUserClaims(pub)
		uc.Permissions = u.Permissions()
		j, err := uc.Encode(seeds["account.nk"])
		if err != nil {
			t.Fatal(err)
		}
		seed, _ := ukp.Seed()
		creds, err := jwt.FormatUserConfig(j, seed)
		if err != nil {
			t.Fatal(err)
		}
		return creds
	}
	agentU := natsauth.User{Role: natsauth.RoleAgent, Tenant: "default"}
	oldAgent := legacy(agentU)
	oldSecurity := legacy(natsauth.User{Role: natsauth.RoleSecurity})

	auth, created, err := natsauth.LoadOrCreate(dir)
	if err != nil || created {
		t.Fatalf("LoadOrCreate of a layout-1 authority: created %v, %v", created, err)
	}
	if pub, _ := seeds["account.nk"].PublicKey(); auth.AccountPublicKey() != pub {
		t.Fatal("the upgrade changed the TURNGUARD account: its streams would be orphaned")
	}
	if auth.Current(oldAgent, agentU) {
		t.Fatal("an agent credential of layout 1 is current")
	}
	srv := startEmbedded(t, embedded.Config{DataDir: home, Listen: "127.0.0.1:0", Auth: auth, Logger: zerolog.Nop()})
	for name, creds := range map[string][]byte{"agent": oldAgent, "security": oldSecurity} {
		path := filepath.Join(home, name+".creds")
		if err := os.WriteFile(path, creds, 0o600); err != nil {
			t.Fatal(err)
		}
		if nc, err := nats.Connect(srv.ClientURL(), nats.UserCredentials(path)); err == nil {
			nc.Close()
			t.Fatalf("the layout-1 %s credential connected after the upgrade", name)
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Fatalf("layout-1 %s credential: %v, want an authorization violation", name, err)
		}
	}
	for _, u := range []natsauth.User{agentU, {Role: natsauth.RoleSecurity}, {Role: natsauth.RoleAdmin}, {Role: natsauth.RoleProcessor}} {
		opt, err := embedded.User(auth, u)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(srv.ClientURL(), opt)
		if err != nil {
			t.Fatalf("%s minted after the upgrade: %v", u.DisplayName(), err)
		}
		nc.Close()
	}
	// Loaded again, it stays upgraded: the same revocation, no new one.
	again, err := natsauth.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := auth.Creds(agentU)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Current(creds, agentU) || again.SecurityAccountPublicKey() != auth.SecurityAccountPublicKey() {
		t.Fatal("the second load upgraded again")
	}
}
