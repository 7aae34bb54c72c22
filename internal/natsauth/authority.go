package natsauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// Names of the operator and accounts in their JWTs.
const (
	OperatorName = "turnguard"
	AccountName  = "TURNGUARD"
	SystemName   = "SYS"
	// SecurityName is the account of the security role.
	SecurityName = "TURNGUARD_SECURITY"
	// tenantAccountPrefix names a tenant's agent account: TENANT_<tenant>.
	tenantAccountPrefix = "TENANT_"
)

// LayoutVersion is the authority layout this version writes: 2 puts agents
// (one account per tenant) and the security role in accounts of their own.
// Version 1 (no layout file) had every user in the TURNGUARD account.
const LayoutVersion = 2

// Authority holds the operator, the system, turnguard and security account
// keys and one account key per tenant: whoever has it can mint credentials
// for any role, so its seeds are readable by the processor's user only.
type Authority struct {
	operator, system, account, security nkeys.KeyPair
	// legacyRevokedBefore is when a layout-1 authority was upgraded: every
	// TURNGUARD user issued up to then (agent and security credentials of
	// the old layout among them) is revoked. 0: never upgraded.
	legacyRevokedBefore int64
	// Dir is where the seeds are kept.
	Dir string

	mu      sync.Mutex
	tenants map[string]nkeys.KeyPair
}

const (
	operatorSeedFile = "operator.nk"
	systemSeedFile   = "system-account.nk"
	accountSeedFile  = "account.nk"
	securitySeedFile = "security-account.nk"
	layoutFile       = "layout.json"
	tenantsDir       = "tenants"
	// AccountsDir, under the authority, holds every account's JWT as
	// <public key>.jwt: the embedded server learns tenant accounts minted
	// while it runs from there, and an external server's resolver (type
	// full) reads the directory itself. JWTs are public: the directory and
	// its files are readable by all, the seeds beside them are not.
	AccountsDir = "accounts"
)

type layout struct {
	Version int `json:"version"`
	// LegacyUsersRevokedBefore: see Authority.legacyRevokedBefore.
	LegacyUsersRevokedBefore int64 `json:"legacy_users_revoked_before,omitempty"`
}

// LoadOrCreate reads the authority's seeds from dir or, when dir holds
// none, creates them (dir mode 0711, seed files 0600). It reports whether
// it created them. A dir holding some seeds but not all is an error rather
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

// Load reads an existing authority. An authority of layout 1 (every user
// in one account) is upgraded on the spot: the security account is created
// and every user the TURNGUARD account issued until now is revoked, since
// agent and security credentials of that layout can write through reply
// and deliver subjects (issue 23). Admin and processor credentials of the
// old layout are revoked with them and must be minted again.
func Load(dir string) (*Authority, error) {
	a := &Authority{Dir: dir, tenants: map[string]nkeys.KeyPair{}}
	for _, k := range []struct {
		file   string
		dst    *nkeys.KeyPair
		prefix nkeys.PrefixByte
	}{{operatorSeedFile, &a.operator, nkeys.PrefixByteOperator}, {systemSeedFile, &a.system, nkeys.PrefixByteAccount}, {accountSeedFile, &a.account, nkeys.PrefixByteAccount}} {
		kp, err := readSeed(filepath.Join(dir, k.file), k.prefix)
		if err != nil {
			return nil, fmt.Errorf("NATS authority: %w (create one with `processor creds init`, or start the embedded processor once)", err)
		}
		*k.dst = kp
	}
	var l layout
	data, err := os.ReadFile(filepath.Join(dir, layoutFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := a.upgrade(); err != nil {
			return nil, fmt.Errorf("NATS authority %s: upgrade to layout %d: %w", dir, LayoutVersion, err)
		}
	case err != nil:
		return nil, fmt.Errorf("NATS authority: %w", err)
	default:
		if err := json.Unmarshal(data, &l); err != nil || l.Version != LayoutVersion {
			return nil, fmt.Errorf("NATS authority %s: layout %s is not version %d", dir, strings.TrimSpace(string(data)), LayoutVersion)
		}
		a.legacyRevokedBefore = l.LegacyUsersRevokedBefore
		if a.security, err = readSeed(filepath.Join(dir, securitySeedFile), nkeys.PrefixByteAccount); err != nil {
			return nil, fmt.Errorf("NATS authority: %w", err)
		}
	}
	if err := a.writeAccountJWTs(); err != nil {
		return nil, err
	}
	return a, nil
}

func readSeed(path string, prefix nkeys.PrefixByte) (nkeys.KeyPair, error) {
	seed, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	pub, _ := kp.PublicKey()
	if !nkeys.IsValidPublicKey(pub) || nkeys.Prefix(pub) != prefix {
		return nil, fmt.Errorf("%s: not a seed of the right kind", filepath.Base(path))
	}
	return kp, nil
}

// upgrade takes a layout-1 authority to the current layout.
func (a *Authority) upgrade() error {
	sec, err := readOrCreateAccountSeed(filepath.Join(a.Dir, securitySeedFile))
	if err != nil {
		return err
	}
	a.security = sec
	a.legacyRevokedBefore = time.Now().Unix()
	return writeLayout(a.Dir, layout{Version: LayoutVersion, LegacyUsersRevokedBefore: a.legacyRevokedBefore})
}

func writeLayout(dir string, l layout) error {
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, layoutFile), append(data, '\n'), 0o600)
}

// readOrCreateAccountSeed reads an account seed, creating it when missing;
// two processes creating it at once end up with the same (the first
// written).
func readOrCreateAccountSeed(path string) (nkeys.KeyPair, error) {
	if kp, err := readSeed(path, nkeys.PrefixByteAccount); err == nil || !errors.Is(err, os.ErrNotExist) {
		return kp, err
	}
	kp, err := nkeys.CreateAccount()
	if err != nil {
		return nil, err
	}
	seed, _ := kp.Seed()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := writeNew(path, append(seed, '\n')); errors.Is(err, os.ErrExist) {
		return readSeed(path, nkeys.PrefixByteAccount)
	} else if err != nil {
		return nil, err
	}
	return kp, nil
}

func create(dir string) (*Authority, error) {
	op, err := nkeys.CreateOperator()
	if err != nil {
		return nil, err
	}
	a := &Authority{operator: op, Dir: dir, tenants: map[string]nkeys.KeyPair{}}
	for _, dst := range []*nkeys.KeyPair{&a.system, &a.account, &a.security} {
		if *dst, err = nkeys.CreateAccount(); err != nil {
			return nil, err
		}
	}
	// 0711: the server's user may reach the account JWTs under it without
	// being able to list or read the seeds.
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("NATS authority: %w", err)
	}
	// The layout first: a crash before the seeds leaves an incomplete
	// authority (refused), never one that looks like layout 1.
	if err := writeLayout(dir, layout{Version: LayoutVersion}); err != nil {
		return nil, fmt.Errorf("NATS authority: %w", err)
	}
	for _, k := range []struct {
		file string
		kp   nkeys.KeyPair
	}{{securitySeedFile, a.security}, {operatorSeedFile, op}, {systemSeedFile, a.system}, {accountSeedFile, a.account}} {
		seed, _ := k.kp.Seed()
		if err := writeNew(filepath.Join(dir, k.file), append(seed, '\n')); err != nil {
			return nil, fmt.Errorf("NATS authority: %w", err)
		}
	}
	if err := a.writeAccountJWTs(); err != nil {
		return nil, err
	}
	return a, nil
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

// writeAtomic replaces path with data in one rename, so that a reader (the
// server's resolver) never sees half a file.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
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

// SecurityAccountPublicKey names the security role's account.
func (a *Authority) SecurityAccountPublicKey() string {
	pub, _ := a.security.PublicKey()
	return pub
}

// TenantAccountPublicKey names the account of a tenant's agents, creating
// it (seed and JWT) on first use.
func (a *Authority) TenantAccountPublicKey(tenant string) (string, error) {
	kp, err := a.tenantAccount(tenant)
	if err != nil {
		return "", err
	}
	pub, _ := kp.PublicKey()
	return pub, nil
}

// tenantAccount returns the tenant's account key, creating the account on
// first use: its seed under tenants/, its JWT under accounts/ (written
// before the key is handed out, so that a server resolving the account
// finds it as soon as a user of it connects).
func (a *Authority) tenantAccount(tenant string) (nkeys.KeyPair, error) {
	if !tenantPattern.MatchString(tenant) {
		return nil, fmt.Errorf("tenant %q: %w", tenant, ErrBadTenant)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if kp, ok := a.tenants[tenant]; ok {
		return kp, nil
	}
	kp, err := readOrCreateAccountSeed(filepath.Join(a.Dir, tenantsDir, tenant+".nk"))
	if err != nil {
		return nil, fmt.Errorf("NATS authority: tenant %s: %w", tenant, err)
	}
	pub, _ := kp.PublicKey()
	claims := a.tenantClaims(tenant, pub)
	if err := a.writeAccountJWT(claims); err != nil {
		return nil, err
	}
	a.tenants[tenant] = kp
	return kp, nil
}

// Tenants lists the tenants that have an account.
func (a *Authority) Tenants() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(a.Dir, tenantsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("NATS authority: %w", err)
	}
	var out []string
	for _, e := range entries {
		if t, ok := strings.CutSuffix(e.Name(), ".nk"); ok && tenantPattern.MatchString(t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// jetStreamUnlimited: the TURNGUARD account's streams are bounded by their
// own limits, not the account's.
var jetStreamUnlimited = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
	Streams: jwt.NoLimit, Consumer: jwt.NoLimit, MaxAckPending: jwt.NoLimit}

// accountClaims are the claims of the system, turnguard and security
// accounts (the tenants' are made on demand).
func (a *Authority) accountClaims() []*jwt.AccountClaims {
	sc := jwt.NewAccountClaims(a.systemPublicKey())
	sc.Name = SystemName
	ac := jwt.NewAccountClaims(a.AccountPublicKey())
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jetStreamUnlimited
	ac.Exports = turnguardExports()
	if a.legacyRevokedBefore > 0 {
		ac.RevokeAt(jwt.All, time.Unix(a.legacyRevokedBefore, 0))
	}
	sec := jwt.NewAccountClaims(a.SecurityAccountPublicKey())
	sec.Name = SecurityName
	sec.Imports = securityImports(a.AccountPublicKey())
	return []*jwt.AccountClaims{sc, ac, sec}
}

func (a *Authority) tenantClaims(tenant, pub string) *jwt.AccountClaims {
	tc := jwt.NewAccountClaims(pub)
	tc.Name = tenantAccountPrefix + tenant
	tc.Tags.Add("tenant:" + tenant)
	tc.Imports = tenantImports(a.AccountPublicKey(), tenant)
	return tc
}

func (a *Authority) operatorJWT() (string, error) {
	opPub, _ := a.operator.PublicKey()
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = OperatorName
	oc.SystemAccount = a.systemPublicKey()
	j, err := oc.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("operator JWT: %w", err)
	}
	return j, nil
}

// writeAccountJWTs brings accounts/ up to date with the fixed accounts and
// every tenant's: a JWT whose claims did not change is left as it is.
func (a *Authority) writeAccountJWTs() error {
	for _, c := range a.accountClaims() {
		if err := a.writeAccountJWT(c); err != nil {
			return err
		}
	}
	tenants, err := a.Tenants()
	if err != nil {
		return err
	}
	for _, t := range tenants {
		if _, err := a.tenantAccount(t); err != nil {
			return err
		}
	}
	return nil
}

// writeAccountJWT writes the account's JWT unless the one on disk already
// says the same.
func (a *Authority) writeAccountJWT(c *jwt.AccountClaims) error {
	dir := filepath.Join(a.Dir, AccountsDir)
	path := filepath.Join(dir, c.Subject+".jwt")
	if old, err := os.ReadFile(path); err == nil {
		if oc, err := jwt.DecodeAccountClaims(string(old)); err == nil && sameAccount(oc, c) {
			return nil
		}
	}
	j, err := c.Encode(a.operator)
	if err != nil {
		return fmt.Errorf("account %s JWT: %w", c.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("NATS authority: %w", err)
	}
	if err := writeAtomic(path, []byte(j), 0o644); err != nil {
		return fmt.Errorf("NATS authority: %w", err)
	}
	return nil
}

// sameAccount compares what an account JWT grants, not when it was signed.
func sameAccount(a, b *jwt.AccountClaims) bool {
	ja, err1 := json.Marshal(a.Account)
	jb, err2 := json.Marshal(b.Account)
	return err1 == nil && err2 == nil && a.Name == b.Name && bytes.Equal(ja, jb)
}

// ConfigureServer makes an embedded server trust the authority: operator
// mode, the fixed accounts in memory and tenant accounts read from
// accounts/ when a user of one first connects, no anonymous clients.
func (a *Authority) ConfigureServer(o *server.Options) error {
	opJWT, err := a.operatorJWT()
	if err != nil {
		return err
	}
	oc, err := jwt.DecodeOperatorClaims(opJWT)
	if err != nil {
		return err
	}
	r := &resolver{dir: filepath.Join(a.Dir, AccountsDir)}
	for _, c := range a.accountClaims() {
		j, err := c.Encode(a.operator)
		if err != nil {
			return fmt.Errorf("account %s JWT: %w", c.Name, err)
		}
		if err := r.Store(c.Subject, j); err != nil {
			return err
		}
	}
	o.TrustedOperators = []*jwt.OperatorClaims{oc}
	o.AccountResolver = r
	o.SystemAccount = a.systemPublicKey()
	return nil
}

// resolver serves the fixed accounts from memory and any other account
// from its JWT file under the authority's accounts/ (the server checks
// that the operator signed it), so that `processor creds add --tenant`
// in another process makes a new tenant account known to a running
// embedded server.
type resolver struct {
	server.MemAccResolver
	dir string
}

func (r *resolver) Fetch(name string) (string, error) {
	if j, err := r.MemAccResolver.Fetch(name); err == nil {
		return j, nil
	}
	if !nkeys.IsValidPublicAccountKey(name) {
		return "", server.ErrMissingAccount
	}
	j, err := os.ReadFile(filepath.Join(r.dir, name+".jwt"))
	if err != nil {
		return "", server.ErrMissingAccount
	}
	return string(j), nil
}

// ServerConfig is the nats-server configuration fragment that makes an
// external server (or each node of a cluster) trust the authority, for
// deploy/nats/nats-server.conf to include: the operator, and a resolver
// reading the account JWTs from the authority's accounts/ directory
// (absolute), where `processor creds add` puts a new tenant's account.
func (a *Authority) ServerConfig() (string, error) {
	opJWT, err := a.operatorJWT()
	if err != nil {
		return "", err
	}
	dir, err := filepath.Abs(filepath.Join(a.Dir, AccountsDir))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# turnguard's NATS authority (processor creds init): the operator, and the\n")
	b.WriteString("# account JWTs (system, TURNGUARD, TURNGUARD_SECURITY, one TENANT_<t> per\n")
	b.WriteString("# tenant) read from the authority's accounts/ directory, where\n")
	b.WriteString("# `processor creds add --role agent --tenant T` writes a new tenant's account:\n")
	b.WriteString("# the server finds it when a user of it first connects, without a reload.\n")
	b.WriteString("# Users are JWTs signed by their account's key; their permissions travel in\n")
	b.WriteString("# the JWT. Regenerate with `processor creds server-config`.\n")
	fmt.Fprintf(&b, "operator: %q\n", opJWT)
	fmt.Fprintf(&b, "system_account: %s\n", a.systemPublicKey())
	b.WriteString("resolver: {\n  type: full\n")
	fmt.Fprintf(&b, "  dir: %q\n", dir)
	b.WriteString("  allow_delete: false\n}\n")
	return b.String(), nil
}

// Issue mints the user's JWT and its nkey seed (for
// nats.UserJWTAndSeed, or Creds for a file), signed by the key of the
// role's account: the tenant's for an agent (created on first use), the
// security account's, or TURNGUARD's for admin and processor.
func (a *Authority) Issue(u User) (userJWT string, seed []byte, err error) {
	if err := u.Validate(); err != nil {
		return "", nil, err
	}
	signer, err := a.signer(u)
	if err != nil {
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
	if userJWT, err = uc.Encode(signer); err != nil {
		return "", nil, fmt.Errorf("user JWT: %w", err)
	}
	seed, _ = kp.Seed()
	return userJWT, seed, nil
}

// signer is the key of the account a user of u's role belongs to.
func (a *Authority) signer(u User) (nkeys.KeyPair, error) {
	switch u.Role {
	case RoleAgent:
		return a.tenantAccount(u.Tenant)
	case RoleSecurity:
		return a.security, nil
	default:
		// A TURNGUARD user issued in the second of an upgrade would fall
		// under the revocation of the old layout's users (issued at or
		// before it): wait that second out.
		if a.legacyRevokedBefore > 0 {
			if d := time.Until(time.Unix(a.legacyRevokedBefore+1, 0)); d > 0 {
				time.Sleep(d)
			}
		}
		return a.account, nil
	}
}

// Current reports whether a credential file's user belongs where this
// authority puts the role u now (the right account, not revoked by an
// upgrade): a credential the processor wrote under an older layout is not.
func (a *Authority) Current(creds []byte, u User) bool {
	j, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return false
	}
	uc, err := jwt.DecodeUserClaims(j)
	if err != nil {
		return false
	}
	signer, err := a.signer(u)
	if err != nil {
		return false
	}
	want, _ := signer.PublicKey()
	if uc.Issuer != want || (uc.IssuerAccount != "" && uc.IssuerAccount != want) {
		return false
	}
	return signer != a.account || uc.IssuedAt > a.legacyRevokedBefore
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
