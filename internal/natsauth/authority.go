package natsauth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// Names of the operator and accounts in their JWTs.
const (
	OperatorName = "turnguard"
	AccountName  = "TURNGUARD"
	SystemName   = "SYS"
)

// Authority holds the operator, the system account and the turnguard
// account keys: whoever has it can mint credentials for any role, so its
// directory is readable by the processor's user only.
type Authority struct {
	operator, system, account nkeys.KeyPair
	// Dir is where the seeds are kept.
	Dir string
}

const (
	operatorSeedFile = "operator.nk"
	systemSeedFile   = "system-account.nk"
	accountSeedFile  = "account.nk"
)

// LoadOrCreate reads the authority's seeds from dir or, when dir holds
// none, creates them (dir mode 0700, files 0600). It reports whether it
// created them. A dir holding some seeds but not all is an error rather
// than a silent new identity that would orphan existing credentials.
func LoadOrCreate(dir string) (*Authority, bool, error) {
	files := []string{operatorSeedFile, systemSeedFile, accountSeedFile}
	present := 0
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			present++
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, false, fmt.Errorf("NATS authority %s: %w", dir, err)
		}
	}
	switch present {
	case len(files):
		a, err := Load(dir)
		return a, false, err
	case 0:
		a, err := create(dir)
		return a, err == nil, err
	default:
		return nil, false, fmt.Errorf("NATS authority %s is incomplete (want %s): restore it from a backup, or remove the directory to start with new credentials", dir, strings.Join(files, ", "))
	}
}

// Load reads an existing authority.
func Load(dir string) (*Authority, error) {
	a := &Authority{Dir: dir}
	for _, k := range []struct {
		file   string
		dst    *nkeys.KeyPair
		prefix nkeys.PrefixByte
	}{{operatorSeedFile, &a.operator, nkeys.PrefixByteOperator}, {systemSeedFile, &a.system, nkeys.PrefixByteAccount}, {accountSeedFile, &a.account, nkeys.PrefixByteAccount}} {
		seed, err := os.ReadFile(filepath.Join(dir, k.file))
		if err != nil {
			return nil, fmt.Errorf("NATS authority: %w (create one with `processor creds init`, or start the embedded processor once)", err)
		}
		kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
		if err != nil {
			return nil, fmt.Errorf("NATS authority %s: %w", k.file, err)
		}
		pub, _ := kp.PublicKey()
		if !nkeys.IsValidPublicKey(pub) || nkeys.Prefix(pub) != k.prefix {
			return nil, fmt.Errorf("NATS authority %s: not a seed of the right kind", k.file)
		}
		*k.dst = kp
	}
	return a, nil
}

func create(dir string) (*Authority, error) {
	op, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	sys, err := nkeys.CreateAccount()
	if err != nil {
		return nil, err
	}
	acc, err := nkeys.CreateAccount()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("NATS authority: %w", err)
	}
	for _, k := range []struct {
		file string
		kp   nkeys.KeyPair
	}{{operatorSeedFile, op}, {systemSeedFile, sys}, {accountSeedFile, acc}} {
		seed, _ := k.kp.Seed()
		if err := writeNew(filepath.Join(dir, k.file), append(seed, '\n')); err != nil {
			return nil, fmt.Errorf("NATS authority: %w", err)
		}
	}
	return &Authority{operator: op, system: sys, account: acc, Dir: dir}, nil
}

// writeNew writes a secret file that must not exist yet, readable by its
// owner only.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// AccountPublicKey names the account that holds turnguard's streams; the
// embedded server keeps them under jetstream/<this key>.
func (a *Authority) AccountPublicKey() string {
	pub, _ := a.account.PublicKey()
	return pub
}

func (a *Authority) systemPublicKey() string {
	pub, _ := a.system.PublicKey()
	return pub
}

// jwts returns the operator's JWT and the account JWTs it signs. Every
// call signs anew; the claims are the same, so servers given either
// agree.
func (a *Authority) jwts() (operator string, accounts map[string]string, err error) {
	opPub, _ := a.operator.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = OperatorName
	oc.SystemAccount = a.systemPublicKey()
	if operator, err = oc.Encode(a.operator); err != nil {
		return "", nil, fmt.Errorf("operator JWT: %w", err)
	}
	accounts = map[string]string{}
	sc := jwt.NewAccountClaims(a.systemPublicKey())
	sc.Name = SystemName
	if accounts[sc.Subject], err = sc.Encode(a.operator); err != nil {
		return "", nil, fmt.Errorf("system account JWT: %w", err)
	}
	ac := jwt.NewAccountClaims(a.AccountPublicKey())
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
		Streams: jwt.NoLimit, Consumer: jwt.NoLimit, MaxAckPending: jwt.NoLimit}
	if accounts[ac.Subject], err = ac.Encode(a.operator); err != nil {
		return "", nil, fmt.Errorf("account JWT: %w", err)
	}
	return operator, accounts, nil
}

// ConfigureServer makes an embedded server trust the authority: operator
// mode, the two accounts in a memory resolver, no anonymous clients.
func (a *Authority) ConfigureServer(o *server.Options) error {
	opJWT, accounts, err := a.jwts()
	if err != nil {
		return err
	}
	oc, err := jwt.DecodeOperatorClaims(opJWT)
	if err != nil {
		return err
	}
	r := &server.MemAccResolver{}
	for pub, j := range accounts {
		if err := r.Store(pub, j); err != nil {
			return err
		}
	}
	o.TrustedOperators = []*jwt.OperatorClaims{oc}
	o.AccountResolver = r
	o.SystemAccount = a.systemPublicKey()
	return nil
}

// ServerConfig is the nats-server configuration fragment that makes an
// external server (or each node of a cluster) trust the authority, for
// deploy/nats/nats-server.conf to include.
func (a *Authority) ServerConfig() (string, error) {
	opJWT, accounts, err := a.jwts()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# turnguard's NATS authority (processor creds init): operator, system account\n")
	b.WriteString("# and the TURNGUARD account. Users are JWTs signed by the account key; their\n")
	b.WriteString("# permissions travel in the JWT. Regenerate with `processor creds server-config`.\n")
	fmt.Fprintf(&b, "operator: %q\n", opJWT)
	fmt.Fprintf(&b, "system_account: %s\n", a.systemPublicKey())
	b.WriteString("resolver: MEMORY\n")
	b.WriteString("resolver_preload: {\n")
	for _, pub := range []string{a.systemPublicKey(), a.AccountPublicKey()} {
		fmt.Fprintf(&b, "  %s: %q\n", pub, accounts[pub])
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// Issue mints the user's JWT and its nkey seed (for
// nats.UserJWTAndSeed, or Creds for a file).
func (a *Authority) Issue(u User) (userJWT string, seed []byte, err error) {
	if err := u.Validate(); err != nil {
		return "", nil, err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", nil, err
	}
	pub, _ := kp.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = u.DisplayName()
	uc.Permissions = u.Permissions()
	uc.Tags.Add("role:" + string(u.Role))
	if u.Tenant != "" {
		uc.Tags.Add("tenant:" + u.Tenant)
	}
	if userJWT, err = uc.Encode(a.account); err != nil {
		return "", nil, fmt.Errorf("user JWT: %w", err)
	}
	seed, _ = kp.Seed()
	return userJWT, seed, nil
}

// Creds mints the user and returns a .creds file's contents (the format
// nats.UserCredentials and the nats CLI's --creds read).
func (a *Authority) Creds(u User) ([]byte, error) {
	j, seed, err := a.Issue(u)
	if err != nil {
		return nil, err
	}
	return jwt.FormatUserConfig(j, seed)
}

// WriteCreds writes a new credential file (mode 0600); an existing file is
// left alone and reported as not written.
func (a *Authority) WriteCreds(path string, u User) (bool, error) {
	if _, err := os.Stat(path); err == nil {
		return false, nil
	}
	creds, err := a.Creds(u)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	if err := writeNew(path, creds); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}
