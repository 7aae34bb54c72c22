package natsconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/natsauth"
)

// env is a test's configuration directories and credentials.
type env struct {
	home, xdg          string
	admin, agent, nkey string
	ca, key            string
}

// setup gives the test a HOME and an XDG_CONFIG_HOME of its own, with
// none of the nats CLI's variables set, and real credentials.
func setup(t *testing.T, useXDG bool) env {
	t.Helper()
	e := env{home: t.TempDir()}
	t.Setenv("HOME", e.home)
	t.Setenv("USERPROFILE", e.home)
	t.Setenv("XDG_CONFIG_HOME", "")
	if useXDG {
		e.xdg = t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", e.xdg)
	}
	for _, k := range []string{"NATS_URL", "NATS_CONTEXT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	auth, _, err := natsauth.LoadOrCreate(filepath.Join(e.home, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	e.admin = filepath.Join(e.home, "admin.creds")
	e.agent = filepath.Join(e.home, "agent.creds")
	for path, u := range map[string]natsauth.User{e.admin: {Role: natsauth.RoleAdmin}, e.agent: {Role: natsauth.RoleAgent, Tenant: "default"}} {
		if _, err := auth.WriteCreds(path, u); err != nil {
			t.Fatal(err)
		}
	}
	e.nkey = filepath.Join(e.home, "user.nk")
	// A user seed (nkeys), as nk -gen user writes it.
	write(t, e.nkey, "SUACSSL3UAHUDXKFSNVUZRF5UHPMWZ6BFDTJ7M6USDXIEDNPPQYYYCU3VY\n")
	e.ca, e.key = selfSigned(t, e.home)
	return e
}

func (e env) contextDir() string {
	if e.xdg != "" {
		return filepath.Join(e.xdg, "nats", "context")
	}
	return filepath.Join(e.home, ".config", "nats", "context")
}

func (e env) addContext(t *testing.T, name, body string) {
	t.Helper()
	write(t, filepath.Join(e.contextDir(), name+".json"), body)
}

func (e env) selectContext(t *testing.T, name string) {
	t.Helper()
	write(t, filepath.Join(filepath.Dir(e.contextDir()), "context.txt"), name+"\n")
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// applied is what a target's options set on a connection.
func applied(t *testing.T, tg Target) nats.Options {
	t.Helper()
	var o nats.Options
	for _, opt := range tg.Options {
		if err := opt(&o); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func TestResolve(t *testing.T) {
	// A context as `nats context add` writes it: every field, most empty.
	full := func(url, creds string) string {
		return `{"description": "", "url": "` + url + `", "socks_proxy": "", "token": "", "user": "", "password": "",
  "creds": "` + creds + `", "nkey": "", "cert": "", "key": "", "ca": "", "nsc": "", "jetstream_domain": "",
  "jetstream_api_prefix": "", "jetstream_event_prefix": "", "inbox_prefix": "", "user_jwt": "", "color_scheme": "", "tls_first": false}`
	}
	tests := []struct {
		name    string
		xdg     bool
		prep    func(t *testing.T, e env)
		flags   func(e env) Flags
		opts    Options
		want    func(t *testing.T, e env, tg Target)
		wantErr string
	}{
		{name: "nothing: the embedded server",
			want: func(t *testing.T, e env, tg Target) {
				if tg.URL != "" || len(tg.Options) != 0 {
					t.Fatalf("target %+v, want none", tg)
				}
			}},
		{name: "nothing: the command's default",
			opts: Options{DefaultURL: nats.DefaultURL},
			want: func(t *testing.T, e env, tg Target) {
				if tg.URL != nats.DefaultURL || tg.Source != "default" || tg.Authenticated {
					t.Fatalf("target %+v", tg)
				}
			}},
		{name: "NATS_URL for a command without an embedded server",
			flags: func(e env) Flags { return Flags{} },
			opts:  Options{Implicit: true, DefaultURL: nats.DefaultURL},
			prep: func(t *testing.T, e env) {
				t.Setenv("NATS_URL", "nats://from-env:4222")
			},
			want: func(t *testing.T, e env, tg Target) {
				if tg.URL != "nats://from-env:4222" || tg.Source != "NATS_URL" {
					t.Fatalf("target %+v", tg)
				}
			}},
		{name: "url and credentials",
			flags: func(e env) Flags { return Flags{URL: "nats://a:4222,nats://b:4222", Creds: e.agent} },
			want: func(t *testing.T, e env, tg Target) {
				o := applied(t, tg)
				if tg.URL != "nats://a:4222,nats://b:4222" || tg.Source != "--nats-url" || !tg.Authenticated || o.UserJWT == nil || o.InboxPrefix != "_INBOX.agent.default" {
					t.Fatalf("target %+v, options %+v", tg, o)
				}
			}},
		{name: "credentials none",
			flags: func(e env) Flags { return Flags{URL: "nats://a:4222", Creds: "none"} },
			opts:  Options{DefaultCreds: "/nonexistent/agent.creds"},
			want: func(t *testing.T, e env, tg Target) {
				if tg.Authenticated || len(tg.Options) != 0 {
					t.Fatalf("target %+v", tg)
				}
			}},
		{name: "a missing credentials file",
			flags:   func(e env) Flags { return Flags{URL: "nats://a:4222", Creds: "/nonexistent/x.creds"} },
			wantErr: "/nonexistent/x.creds"},
		{name: "a missing default credentials file",
			opts:    Options{DefaultURL: nats.DefaultURL, DefaultCreds: "/nonexistent/agent.creds"},
			wantErr: "/nonexistent/agent.creds"},
		{name: "a missing CA file",
			flags:   func(e env) Flags { return Flags{URL: "nats://a:4222", CA: "/nonexistent/ca.pem"} },
			wantErr: "/nonexistent/ca.pem"},
		{name: "credentials without a server",
			flags:   func(e env) Flags { return Flags{Creds: e.admin} },
			wantErr: "without one the embedded server is used"},
		{name: "NATS_URL does not leave the embedded server",
			prep: func(t *testing.T, e env) { t.Setenv("NATS_URL", "nats://from-env:4222") },
			want: func(t *testing.T, e env, tg Target) {
				if tg.URL != "" {
					t.Fatalf("target %+v, want the embedded server", tg)
				}
			}},
		{name: "a selected context does not leave the embedded server",
			prep: func(t *testing.T, e env) {
				e.addContext(t, "sel", full("nats://sel:4222", e.admin))
				e.selectContext(t, "sel")
			},
			want: func(t *testing.T, e env, tg Target) {
				if tg.URL != "" {
					t.Fatalf("target %+v, want the embedded server", tg)
				}
			}},
		{name: "a named context under ~/.config",
			prep:  func(t *testing.T, e env) { e.addContext(t, "tg-admin", full("nats://ctx:4222", e.admin)) },
			flags: func(e env) Flags { return Flags{Context: "tg-admin"} },
			want: func(t *testing.T, e env, tg Target) {
				o := applied(t, tg)
				if tg.URL != "nats://ctx:4222" || !strings.Contains(tg.Source, `"tg-admin"`) || !tg.Authenticated || o.UserJWT == nil {
					t.Fatalf("target %+v", tg)
				}
			}},
		{name: "a named context under XDG_CONFIG_HOME", xdg: true,
			prep: func(t *testing.T, e env) {
				e.addContext(t, "x", `{"url": "nats://xdg:4222", "user": "u", "password": "p", "ca": "`+e.ca+`", "cert": "`+e.ca+`", "key": "`+e.key+`", "tls_first": true}`)
			},
			flags: func(e env) Flags { return Flags{Context: "x"} },
			want: func(t *testing.T, e env, tg Target) {
				o := applied(t, tg)
				if tg.URL != "nats://xdg:4222" || o.User != "u" || o.Password != "p" || !o.TLSHandshakeFirst || !o.Secure || o.RootCAsCB == nil || o.TLSCertCB == nil {
					t.Fatalf("target %+v, options %+v", tg, o)
				}
			}},
		{name: "a context without url: the nats CLI's default",
			prep:  func(t *testing.T, e env) { e.addContext(t, "t", `{"token": "s3cret"}`) },
			flags: func(e env) Flags { return Flags{Context: "t"} },
			want: func(t *testing.T, e env, tg Target) {
				if o := applied(t, tg); tg.URL != nats.DefaultURL || o.Token != "s3cret" {
					t.Fatalf("target %+v", tg)
				}
			}},
		{name: "nkey and inbox prefix; ~ expanded",
			prep: func(t *testing.T, e env) {
				e.addContext(t, "nk", `{"url": "nats://n:4222", "nkey": "~/user.nk", "inbox_prefix": "_INBOX.mine"}`)
			},
			flags: func(e env) Flags { return Flags{Context: "nk"} },
			want: func(t *testing.T, e env, tg Target) {
				if o := applied(t, tg); o.Nkey == "" || o.InboxPrefix != "_INBOX.mine" {
					t.Fatalf("options %+v", o)
				}
			}},
		{name: "flags override a context's url and credentials",
			prep: func(t *testing.T, e env) {
				e.addContext(t, "c", `{"url": "nats://ctx:4222", "user": "u", "inbox_prefix": "_INBOX.ctx"}`)
			},
			flags: func(e env) Flags { return Flags{Context: "c", URL: "nats://flag:4222", Creds: e.agent} },
			want: func(t *testing.T, e env, tg Target) {
				o := applied(t, tg)
				if tg.URL != "nats://flag:4222" || o.User != "" || o.UserJWT == nil || o.InboxPrefix != "_INBOX.agent.default" {
					t.Fatalf("target %+v, options %+v", tg, o)
				}
			}},
		{name: "the context variable",
			prep: func(t *testing.T, e env) {
				e.addContext(t, "c", `{"url": "nats://ctx:4222"}`)
			},
			// TURNGUARD_NATS_CONTEXT reaches Flags through cliflag.ApplyEnv;
			// see TestFlagsFromEnvironment.
			flags: func(e env) Flags { return Flags{Context: "c"} },
			opts:  Options{Implicit: true},
			want: func(t *testing.T, e env, tg Target) {
				if tg.URL != "nats://ctx:4222" {
					t.Fatalf("target %+v", tg)
				}
			}},
		{name: "a named context beats NATS_URL",
			prep: func(t *testing.T, e env) {
				e.addContext(t, "c", `{"url": "nats://ctx:4222"}`)
				t.Setenv("NATS_URL", "nats://from-env:4222")
			},
			flags: func(e env) Flags { return Flags{Context: "c"} },
			opts:  Options{Implicit: true},
			want: func(t *testing.T, e env, tg Target) {
				if tg.URL != "nats://ctx:4222" {
					t.Fatalf("target %+v", tg)
				}
			}},
		{name: "NATS_URL beats the selected context",
			prep: func(t *testing.T, e env) {
				e.addContext(t, "sel", full("nats://sel:4222", e.admin))
				e.selectContext(t, "sel")
				t.Setenv("NATS_URL", "nats://from-env:4222")
			},
			opts:    Options{Implicit: true, DefaultCreds: "/nonexistent"},
			wantErr: "/nonexistent"}, // the context is not used at all, so its credentials are not either
		{name: "the selected context", xdg: true,
			prep: func(t *testing.T, e env) {
				e.addContext(t, "sel", full("nats://sel:4222", e.admin))
				e.selectContext(t, "sel")
			},
			opts: Options{Implicit: true, DefaultURL: nats.DefaultURL, DefaultCreds: "/nonexistent"},
			want: func(t *testing.T, e env, tg Target) {
				if tg.URL != "nats://sel:4222" || !tg.Authenticated || !strings.Contains(tg.Source, "context.txt") {
					t.Fatalf("target %+v", tg)
				}
			}},
		{name: "NATS_CONTEXT beats context.txt",
			prep: func(t *testing.T, e env) {
				e.addContext(t, "sel", full("nats://sel:4222", e.admin))
				e.addContext(t, "env", full("nats://env:4222", e.admin))
				e.selectContext(t, "sel")
				t.Setenv("NATS_CONTEXT", "env")
			},
			opts: Options{Implicit: true},
			want: func(t *testing.T, e env, tg Target) {
				if tg.URL != "nats://env:4222" || !strings.Contains(tg.Source, "NATS_CONTEXT") {
					t.Fatalf("target %+v", tg)
				}
			}},
		{name: "a selected context that does not exist",
			prep:    func(t *testing.T, e env) { e.selectContext(t, "gone") },
			opts:    Options{Implicit: true},
			wantErr: `no nats context "gone"`},
		{name: "a named context that does not exist",
			flags:   func(e env) Flags { return Flags{Context: "nope"} },
			wantErr: filepath.Join("nats", "context", "nope.json") + " does not exist"},
		{name: "a context name with a path",
			flags:   func(e env) Flags { return Flags{Context: "../etc/x"} },
			wantErr: "invalid context name"},
		{name: "unsupported fields",
			prep: func(t *testing.T, e env) {
				e.addContext(t, "js", `{"url": "nats://x:4222", "jetstream_domain": "hub", "nsc": "nsc://o/a/u", "user_jwt": ""}`)
			},
			flags:   func(e env) Flags { return Flags{Context: "js"} },
			wantErr: "does not support jetstream_domain, nsc"},
		{name: "two kinds of credentials",
			prep:    func(t *testing.T, e env) { e.addContext(t, "two", `{"user": "u", "token": "t"}`) },
			flags:   func(e env) Flags { return Flags{Context: "two"} },
			wantErr: "more than one kind of credential (user, token)"},
		{name: "a certificate without its key",
			prep:    func(t *testing.T, e env) { e.addContext(t, "c", `{"cert": "c.pem"}`) },
			flags:   func(e env) Flags { return Flags{Context: "c"} },
			wantErr: "cert and key go together"},
		{name: "a context's missing credentials file",
			prep:    func(t *testing.T, e env) { e.addContext(t, "c", `{"creds": "/nonexistent/c.creds"}`) },
			flags:   func(e env) Flags { return Flags{Context: "c"} },
			wantErr: "/nonexistent/c.creds"},
		{name: "a context that is not JSON",
			prep:    func(t *testing.T, e env) { e.addContext(t, "bad", `url: x`) },
			flags:   func(e env) Flags { return Flags{Context: "bad"} },
			wantErr: `nats context "bad"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, tc.xdg)
			if tc.prep != nil {
				tc.prep(t, e)
			}
			var f Flags
			if tc.flags != nil {
				f = tc.flags(e)
			}
			tg, err := Resolve(f, tc.opts)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			default:
				tc.want(t, e, tg)
			}
		})
	}
}

// Every connection flag has the TURNGUARD_* variable of its name.
func TestFlagsFromEnvironment(t *testing.T) {
	e := setup(t, false)
	e.addContext(t, "c", `{"url": "nats://ctx:4222"}`)
	t.Setenv("TURNGUARD_NATS_CONTEXT", "c")
	t.Setenv("TURNGUARD_NATS_CREDS", e.admin)
	t.Setenv("TURNGUARD_NATS_CA", e.ca)
	t.Setenv("TURNGUARD_NATS_URL", "nats://env:4222")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var f Flags
	f.Register(fs, "any")
	if err := cliflag.ApplyEnv(fs); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--nats-url", "nats://flag:4222"}); err != nil {
		t.Fatal(err)
	}
	want := Flags{URL: "nats://flag:4222", Creds: e.admin, CA: e.ca, Context: "c"}
	if f != want {
		t.Fatalf("flags %+v, want %+v", f, want)
	}
}

// selfSigned writes a self-signed certificate and its key into dir.
func selfSigned(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	write(t, certPath, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	write(t, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})))
	return certPath, keyPath
}

// --context is --nats-context as the nats CLI spells it.
func TestContextAlias(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var f Flags
	f.Register(fs, "any")
	if err := fs.Parse([]string{"--context", "tg-admin"}); err != nil {
		t.Fatal(err)
	}
	if f.Context != "tg-admin" {
		t.Fatalf("--context set Context %q", f.Context)
	}
}
