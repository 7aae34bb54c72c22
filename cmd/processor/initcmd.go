package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnguard/turnguard/internal/cliflag"
	"github.com/turnguard/turnguard/internal/gateway"
	"github.com/turnguard/turnguard/internal/keyfile"
	"github.com/turnguard/turnguard/internal/natsauth"
)

const initUsage = `Usage: processor init --dir DIR [--http-names NAMES] [--http-tenant T]

Lays out, in DIR, everything several processors and their NATS servers share
when they run apart (containers, hosts), creating only what is missing, so it
can run at every start:

  DIR/auth/, DIR/auth.conf, DIR/creds/*.creds   as processor creds init
  DIR/state-key                                 --state-key of every processor
  DIR/receipt-key.pem, DIR/receipt-key.pub      --receipt-key; the public key for clients
  DIR/http-tls.pem, DIR/http-tls-key.pem        a self-signed certificate for --http-tls-cert/key
                                                (its names: --http-names); clients trust http-tls.pem
  DIR/http-tokens.yaml, DIR/http-token          --http-tokens with one caller, "demo", and its
                                                bearer token (keep it as secret as the creds)

Flags:
`

// initCommand runs "processor init" and returns the exit code.
func initCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("processor init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "the directory to lay out (created 0700)")
	names := fs.String("http-names", "localhost,127.0.0.1", "comma-separated DNS names and IP addresses the HTTP certificate is for")
	tenant := fs.String("http-tenant", "default", "the tenant of the demo HTTP caller")
	fs.Usage = cliflag.Usage(fs, initUsage, "")
	err := cliflag.ApplyEnv(fs)
	if err == nil {
		err = fs.Parse(args)
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && (*dir == "" || fs.NArg() > 0) {
		err = errors.New("init needs --dir and no arguments (see --help)")
	}
	if err != nil {
		fmt.Fprintln(stderr, "processor init:", err)
		return 2
	}
	made, err := layOut(*dir, strings.Split(*names, ","), *tenant)
	for _, m := range made {
		fmt.Fprintln(stdout, "created", m)
	}
	if err != nil {
		fmt.Fprintln(stderr, "processor init:", err)
		return 1
	}
	if len(made) == 0 {
		fmt.Fprintln(stdout, *dir, "holds everything already; nothing created")
	}
	return 0
}

// layOut creates what dir lacks and lists what it created.
func layOut(dir string, names []string, tenant string) ([]string, error) {
	var made []string
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	auth, created, err := natsauth.LoadOrCreate(filepath.Join(dir, "auth"))
	if err != nil {
		return made, err
	}
	if created {
		made = append(made, auth.Dir)
	}
	conf := filepath.Join(dir, "auth.conf")
	// An auth.conf of the first layout preloads two accounts and knows no
	// tenant's: it is written anew with the resolver that reads accounts/.
	if old, err := os.ReadFile(conf); missing(conf) || (err == nil && !strings.Contains(string(old), "resolver: {")) {
		text, err := auth.ServerConfig()
		if err != nil {
			return made, err
		}
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return made, err
		}
		made = append(made, conf)
	}
	written, err := writeRoleCreds(auth, filepath.Join(dir, "creds"), true)
	made = append(made, written...)
	if err != nil {
		return made, err
	}
	if _, created, err := keyfile.StateKey(filepath.Join(dir, "state-key")); err != nil {
		return made, err
	} else if created {
		made = append(made, filepath.Join(dir, "state-key"))
	}
	keyPath := filepath.Join(dir, "receipt-key.pem")
	signer, created, err := keyfile.ReceiptSigner(keyPath)
	if err != nil {
		return made, err
	}
	if created {
		made = append(made, keyPath)
	}
	if pub := keyfile.ReceiptPublicPath(keyPath); missing(pub) {
		if err := keyfile.WriteReceiptPublic(pub, signer); err != nil {
			return made, err
		}
		made = append(made, pub)
	}
	cert, key := filepath.Join(dir, "http-tls.pem"), filepath.Join(dir, "http-tls-key.pem")
	if missing(cert) || missing(key) {
		if err := selfSigned(cert, key, names); err != nil {
			return made, err
		}
		made = append(made, cert, key)
	}
	tokens, tokenFile := filepath.Join(dir, "http-tokens.yaml"), filepath.Join(dir, "http-token")
	if missing(tokens) {
		token, sum, err := gateway.NewToken()
		if err != nil {
			return made, err
		}
		if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
			return made, err
		}
		if err := gateway.AppendCaller(tokens, gateway.Caller{Name: "demo", Tenant: tenant, TokenSHA256: sum}); err != nil {
			return made, err
		}
		made = append(made, tokens, tokenFile)
	}
	return made, nil
}

func missing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// selfSigned writes a self-signed ECDSA P-256 certificate for names (DNS
// names or IP addresses), valid for a year, and its key (0600).
func selfSigned(certPath, keyPath string, names []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "turnguard HTTP endpoint"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// Its own CA, so that clients trust exactly this file.
		IsCA: true, BasicConstraintsValid: true}
	for _, n := range names {
		switch n = strings.TrimSpace(n); {
		case n == "":
		case net.ParseIP(n) != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(n))
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}
