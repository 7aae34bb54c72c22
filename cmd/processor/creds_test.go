package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/pkg/client"
)

func TestCredsCommand(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := credsCommand(args, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	if code, out, _ := run("init", "--dir", dir); code != 0 || !strings.Contains(out, "processor.creds") {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	for _, f := range []string{"auth.conf", "creds/agent.creds", "creds/security.creds", "creds/admin.creds", "creds/processor.creds"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if code, _, errOut := run("init", "--dir", dir); code != 1 || !strings.Contains(errOut, "already holds an authority") {
		t.Fatalf("init twice: exit %d: %s", code, errOut)
	}
	conf, err := os.ReadFile(filepath.Join(dir, "auth.conf"))
	if err != nil {
		t.Fatal(err)
	}
	accounts, err := filepath.Abs(filepath.Join(dir, "auth", "accounts"))
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run("server-config", "--auth-dir", filepath.Join(dir, "auth")); code != 0 || !strings.Contains(out, "type: full") ||
		!strings.Contains(string(conf), `dir: "`+accounts+`"`) {
		t.Fatalf("server-config: exit %d\n%s", code, out)
	}

	acme := filepath.Join(dir, "acme.creds")
	if code, _, errOut := run("add", "--auth-dir", filepath.Join(dir, "auth"), "--role", "agent", "--tenant", "acme", "--out", acme); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	// The tenant's account, for the server's resolver to find.
	if jwts, err := filepath.Glob(filepath.Join(accounts, "*.jwt")); err != nil || len(jwts) != 5 {
		t.Fatalf("account JWTs after the first tenant: %v, %v (want system, TURNGUARD, security, default, acme)", jwts, err)
	}
	if prefix, err := client.InboxPrefixOf(acme); err != nil || prefix != "_INBOX.agent.acme" {
		t.Fatalf("inbox prefix of the acme credential: %q, %v", prefix, err)
	}
	if prefix, err := client.InboxPrefixOf(filepath.Join(dir, "creds", "admin.creds")); err != nil || prefix != "" {
		t.Fatalf("inbox prefix of the admin credential: %q, %v", prefix, err)
	}
	if code, out, _ := run("add", "--auth-dir", filepath.Join(dir, "auth"), "--role", "security"); code != 0 || !strings.Contains(out, "BEGIN NATS USER JWT") {
		t.Fatalf("add to stdout: exit %d\n%s", code, out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--auth-dir", filepath.Join(dir, "auth"), "--role", "agent", "--tenant", "acme", "--out", acme}, "exists"},
		{[]string{"add", "--auth-dir", filepath.Join(dir, "auth"), "--role", "agent"}, "tenant"},
		{[]string{"add", "--auth-dir", filepath.Join(dir, "auth"), "--role", "admin", "--tenant", "acme"}, "not bound to a tenant"},
		{[]string{"add", "--auth-dir", filepath.Join(dir, "auth"), "--role", "root"}, "unknown role"},
		{[]string{"add", "--auth-dir", filepath.Join(dir, "nowhere"), "--role", "admin"}, "processor creds init"},
		{[]string{"init"}, "--dir"},
	} {
		if code, _, errOut := run(c.args...); code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 1 mentioning %q", c.args, code, errOut, c.want)
		}
	}

	code, out, _ := run("permissions", "--role", "agent", "--tenant", "acme")
	var perms struct {
		Account     string                           `json:"account"`
		Imports     []struct{ Type, Subject string } `json:"imports_from_turnguard"`
		InboxPrefix string                           `json:"inbox_prefix"`
		Permissions struct {
			Pub struct{ Allow []string } `json:"pub"`
			Sub struct{ Allow []string } `json:"sub"`
		} `json:"permissions"`
	}
	if err := json.Unmarshal([]byte(out), &perms); code != 0 || err != nil {
		t.Fatalf("permissions: exit %d, %v\n%s", code, err, out)
	}
	if perms.InboxPrefix != "_INBOX.agent.acme" || strings.Join(perms.Permissions.Pub.Allow, ",") != "acs.hooks.acme.>" ||
		strings.Join(perms.Permissions.Sub.Allow, ",") != "acs.decisions.acme.>,_INBOX.agent.acme.>" {
		t.Fatalf("agent permissions: %+v", perms)
	}
	if perms.Account != "TENANT_acme" || len(perms.Imports) != 2 || perms.Imports[0].Subject != "acs.hooks.acme.>" || perms.Imports[1].Subject != "acs.decisions.acme.>" {
		t.Fatalf("agent account: %+v", perms)
	}
}
