package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/natsauth"
)

const credsUsage = `Usage:
  processor creds add --role ROLE [--tenant T] [--name N] [--out FILE]
                                   mint a credential (agent credentials need --tenant)
  processor creds init --dir DIR   create an authority for an external NATS server:
                                   DIR/auth (keys), DIR/auth.conf (server config
                                   fragment), DIR/creds/{agent,security,admin,processor}.creds
  processor creds server-config    print the nats-server config fragment of the authority
  processor creds permissions --role ROLE [--tenant T]
                                   print a role's subject permissions (JSON)

Roles: agent (one tenant's envelopes and decisions; an account per tenant),
security (read everything, publish nothing; an account of its own), admin
(streams and replay; cannot publish as the processor), processor (turnguard
itself); admin and processor share the TURNGUARD account that holds the
streams. The authority is <data-dir>/auth unless --auth-dir names another; the
embedded processor creates it on its first start. A new tenant's account JWT
goes to <auth-dir>/accounts, where the embedded server and an external
server's resolver find it without a restart.
`

// credsCommand runs "processor creds …" and returns the exit code.
func credsCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, credsUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	fs := flag.NewFlagSet("processor creds "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "./data", "the embedded processor's data directory, whose auth/ holds the authority")
	authDir := fs.String("auth-dir", "", "the authority's directory (default <data-dir>/auth)")
	role := fs.String("role", "", "agent, security, admin or processor")
	tenant := fs.String("tenant", "", "the tenant an agent credential is bound to")
	name := fs.String("name", "", "the credential's name (default <role>[-<tenant>])")
	out := fs.String("out", "", "write the credential to this file (mode 0600, must not exist) instead of stdout")
	dir := fs.String("dir", "", "creds init: the directory to create")
	fs.Usage = cliflag.Usage(fs, "Usage: processor creds "+args[0]+" [flags]\n\nFlags:\n", "")
	err := cliflag.ApplyEnv(fs)
	if err == nil {
		err = fs.Parse(args[1:])
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err == nil {
		if *authDir == "" {
			*authDir = filepath.Join(*dataDir, "auth")
		}
		user := natsauth.User{Role: natsauth.Role(*role), Tenant: *tenant, Name: *name}
		switch args[0] {
		case "add":
			err = credsAdd(*authDir, user, *out, stdout, stderr)
		case "init":
			err = credsInit(*dir, stdout)
		case "server-config":
			err = credsServerConfig(*authDir, stdout)
		case "permissions":
			err = credsPermissions(user, stdout)
		default:
			fmt.Fprint(stderr, credsUsage)
			return 2
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "processor creds:", err)
		return 1
	}
	return 0
}

func credsAdd(authDir string, u natsauth.User, out string, stdout, stderr io.Writer) error {
	if err := u.Validate(); err != nil {
		return err
	}
	auth, err := natsauth.Load(authDir)
	if err != nil {
		return err
	}
	if out == "" {
		creds, err := auth.Creds(u)
		if err != nil {
			return err
		}
		_, err = stdout.Write(creds)
		return err
	}
	written, err := auth.WriteCreds(out, u)
	if err != nil {
		return err
	}
	if !written {
		return fmt.Errorf("%s exists; choose another --out", out)
	}
	fmt.Fprintf(stderr, "wrote %s (%s)\n", out, describe(u))
	fmt.Fprintf(stderr, "account %s\n", u.AccountName())
	if p := u.InboxPrefix(); p != "" {
		fmt.Fprintf(stderr, "connect with inbox prefix %s (nats CLI: --inbox-prefix %s; turnguard's tools set it themselves)\n", p, p)
	}
	return nil
}

func describe(u natsauth.User) string {
	if u.Tenant != "" {
		return fmt.Sprintf("role %s, tenant %s", u.Role, u.Tenant)
	}
	return "role " + string(u.Role)
}

// credsInit lays out an authority for an external server or cluster.
func credsInit(dir string, stdout io.Writer) error {
	if dir == "" {
		return errors.New("creds init needs --dir")
	}
	auth, created, err := natsauth.LoadOrCreate(filepath.Join(dir, "auth"))
	if err != nil {
		return err
	}
	if !created {
		return fmt.Errorf("%s already holds an authority; mint more credentials with `processor creds add --auth-dir %s`", dir, auth.Dir)
	}
	conf, err := auth.ServerConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "auth.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	written, err := writeRoleCreds(auth, filepath.Join(dir, "creds"), true)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "authority %s\nserver config fragment %s (include it from nats-server.conf; see deploy/nats)\n", auth.Dir, filepath.Join(dir, "auth.conf"))
	for _, w := range written {
		fmt.Fprintln(stdout, "credential", w)
	}
	return nil
}

// writeRoleCreds writes one credential per role into dir, skipping files
// that exist (a restart must not invalidate what users copied) unless the
// authority no longer accepts them: a credential of an older layout (all
// roles in one account, issue 23) is moved aside to <file>.revoked and
// minted again. The agent credential is bound to the default tenant. The
// processor's own is written only on request: the embedded processor mints
// it in memory.
func writeRoleCreds(auth *natsauth.Authority, dir string, processor bool) ([]string, error) {
	var written []string
	for _, r := range natsauth.Roles {
		if r == natsauth.RoleProcessor && !processor {
			continue
		}
		u := natsauth.User{Role: r}
		if r == natsauth.RoleAgent {
			u.Tenant = "default"
		}
		path := filepath.Join(dir, string(r)+".creds")
		if old, err := os.ReadFile(path); err == nil && !auth.Current(old, u) {
			if err := os.Rename(path, path+".revoked"); err != nil {
				return written, fmt.Errorf("move aside the revoked %s: %w", path, err)
			}
		}
		ok, err := auth.WriteCreds(path, u)
		if err != nil {
			return written, err
		}
		if ok {
			written = append(written, path)
		}
	}
	return written, nil
}

func credsServerConfig(authDir string, stdout io.Writer) error {
	auth, err := natsauth.Load(authDir)
	if err != nil {
		return err
	}
	conf, err := auth.ServerConfig()
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, conf)
	return err
}

func credsPermissions(u natsauth.User, stdout io.Writer) error {
	if err := u.Validate(); err != nil {
		return err
	}
	type imp struct {
		Type    string `json:"type"`
		Subject string `json:"subject"`
		Local   string `json:"local_subject,omitempty"`
	}
	var imports []imp
	for _, i := range u.AccountImports() {
		imports = append(imports, imp{i.Type.String(), string(i.Subject), string(i.LocalSubject)})
	}
	out := struct {
		Role        natsauth.Role `json:"role"`
		Tenant      string        `json:"tenant,omitempty"`
		Account     string        `json:"account"`
		InboxPrefix string        `json:"inbox_prefix,omitempty"`
		Permissions any           `json:"permissions"`
		// Imports are what the account takes from TURNGUARD: a reply to
		// anything the user publishes lands in its own account.
		Imports []imp `json:"imports_from_turnguard,omitempty"`
	}{u.Role, u.Tenant, u.AccountName(), u.InboxPrefix(), u.Permissions(), imports}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
