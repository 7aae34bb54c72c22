package gateway

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// Caller is one party allowed to call POST /acs: authenticated by a bearer
// token (only its SHA-256 is stored, so the file holds no secret) or by
// the identity of a verified client certificate. Its tenant is the tenant
// of everything it sends, and its AgentID, when set, the only agent_id
// its envelopes may carry.
type Caller struct {
	Name    string `yaml:"name"`
	Tenant  string `yaml:"tenant"`
	AgentID string `yaml:"agent_id,omitempty"`
	// TokenSHA256 is the lowercase hex SHA-256 of the bearer token.
	TokenSHA256 string `yaml:"token_sha256,omitempty"`
	// CertSubject matches the client certificate's subject in its RFC 2253
	// form (pkix.Name.String, e.g. "CN=ci,O=Acme"); CertURI one of its URI
	// SANs (e.g. a SPIFFE id); CertDNS one of its DNS SANs.
	CertSubject string `yaml:"cert_subject,omitempty"`
	CertURI     string `yaml:"cert_uri,omitempty"`
	CertDNS     string `yaml:"cert_dns,omitempty"`

	hash []byte
}

// usesCert reports whether the caller is identified by a certificate.
func (c *Caller) usesCert() bool { return c.CertSubject != "" || c.CertURI != "" || c.CertDNS != "" }

// matchesCert reports whether a verified leaf certificate is this caller's.
func (c *Caller) matchesCert(cert *x509.Certificate) bool {
	switch {
	case c.CertSubject != "":
		return cert.Subject.String() == c.CertSubject
	case c.CertURI != "":
		return slices.ContainsFunc(cert.URIs, func(u *url.URL) bool { return u.String() == c.CertURI })
	case c.CertDNS != "":
		return slices.ContainsFunc(cert.DNSNames, func(d string) bool { return strings.EqualFold(d, c.CertDNS) })
	}
	return false
}

// Callers is the parsed --http-tokens file.
type Callers struct {
	list []*Caller
}

// callersFile is the file's layout.
type callersFile struct {
	Callers []*Caller `yaml:"callers"`
}

// MaxCallersFileBytes bounds the file read: it is configuration, not data.
const MaxCallersFileBytes = 4 << 20

// LoadCallers reads and checks a callers file.
func LoadCallers(path string) (*Callers, error) {
	raw, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	cs, err := ParseCallers(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cs, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxCallersFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(raw) > MaxCallersFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxCallersFileBytes)
	}
	return raw, nil
}

// ParseCallers parses and checks a callers file: unknown fields, duplicate
// names or token hashes, and a caller with no credential, or two, are
// errors, so that a typo cannot silently open or close the endpoint.
func ParseCallers(raw []byte) (*Callers, error) {
	var f callersFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("callers file: %w", err)
	}
	names := map[string]bool{}
	hashes := map[string]string{}
	for i, c := range f.Callers {
		if c == nil {
			return nil, fmt.Errorf("callers[%d]: empty entry", i)
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("callers[%d] (%q): %w", i, c.Name, err)
		}
		if names[c.Name] {
			return nil, fmt.Errorf("callers[%d]: name %q is used twice", i, c.Name)
		}
		names[c.Name] = true
		if c.TokenSHA256 != "" {
			if other, dup := hashes[c.TokenSHA256]; dup {
				return nil, fmt.Errorf("callers[%d] (%q): the same token as %q", i, c.Name, other)
			}
			hashes[c.TokenSHA256] = c.Name
		}
	}
	return &Callers{list: f.Callers}, nil
}

func (c *Caller) check() error {
	if c.Name == "" || strings.ContainsFunc(c.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return errors.New("name must be set and printable")
	}
	if len(c.Name) > acs.MaxIDBytes {
		// The processor keeps the name in every session of the caller.
		return fmt.Errorf("name has %d bytes, at most %d", len(c.Name), acs.MaxIDBytes)
	}
	if err := acs.CheckTenant(c.Tenant); err != nil {
		return err
	}
	kinds := 0
	for _, s := range []string{c.TokenSHA256, c.CertSubject, c.CertURI, c.CertDNS} {
		if s != "" {
			kinds++
		}
	}
	if kinds != 1 {
		return errors.New("exactly one of token_sha256, cert_subject, cert_uri and cert_dns must be set")
	}
	if c.TokenSHA256 != "" {
		c.TokenSHA256 = strings.ToLower(c.TokenSHA256)
		h, err := hex.DecodeString(c.TokenSHA256)
		if err != nil || len(h) != sha256.Size {
			return errors.New("token_sha256 must be 64 hex digits (the SHA-256 of the token, not the token)")
		}
		c.hash = h
	}
	return nil
}

// Len is the number of callers.
func (cs *Callers) Len() int { return len(cs.list) }

// HasTokens reports whether any caller uses a bearer token.
func (cs *Callers) HasTokens() bool {
	return slices.ContainsFunc(cs.list, func(c *Caller) bool { return c.TokenSHA256 != "" })
}

// HasCerts reports whether any caller uses a client certificate.
func (cs *Callers) HasCerts() bool { return slices.ContainsFunc(cs.list, (*Caller).usesCert) }

// Tenants lists the callers' tenants, each once.
func (cs *Callers) Tenants() []string {
	var ts []string
	for _, c := range cs.list {
		if !slices.Contains(ts, c.Tenant) {
			ts = append(ts, c.Tenant)
		}
	}
	return ts
}

// byToken returns the caller whose token hash is the token's. Every hash
// is compared, in constant time, so the time taken says nothing about
// which entry, or how much of one, matched.
func (cs *Callers) byToken(token string) *Caller {
	sum := sha256.Sum256([]byte(token))
	var found *Caller
	for _, c := range cs.list {
		if c.hash != nil && subtle.ConstantTimeCompare(sum[:], c.hash) == 1 {
			found = c
		}
	}
	return found
}

// byCert returns the caller a verified leaf certificate identifies.
func (cs *Callers) byCert(cert *x509.Certificate) *Caller {
	for _, c := range cs.list {
		if c.usesCert() && c.matchesCert(cert) {
			return c
		}
	}
	return nil
}

// TokenPrefix starts every token NewToken makes, so that secret scanners
// can recognise a leaked one.
const TokenPrefix = "tgt_"

// NewToken returns a fresh bearer token (256 random bits) and the hex
// SHA-256 a callers file stores for it.
func NewToken() (token, sha256Hex string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("random token: %w", err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken is the token_sha256 of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// AppendCaller adds a caller to the callers file at path, creating it
// (mode 0600) when missing. The file is parsed as YAML nodes, so comments
// and layout of the existing entries survive, checked with the new entry
// as the endpoint will check it, and replaced atomically.
func AppendCaller(path string, c Caller) error {
	raw, err := readBounded(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: the document is not a mapping with a callers list", path)
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "callers" {
			list = root.Content[i+1]
		}
	}
	if list == nil {
		list = &yaml.Node{Kind: yaml.SequenceNode}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "callers"}, list)
	}
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		*list = yaml.Node{Kind: yaml.SequenceNode}
	}
	if list.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s: callers is not a list", path)
	}
	var entry yaml.Node
	if err := entry.Encode(&c); err != nil {
		return err
	}
	list.Content = append(list.Content, &entry)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	if _, err := ParseCallers(out.Bytes()); err != nil {
		return fmt.Errorf("%s with the new caller: %w", path, err)
	}
	return writeAtomic(path, out.Bytes())
}

// writeAtomic replaces path with data, mode 0600: a crash leaves the old
// file or the new one, never half of it.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// accessTokenParam is the URI query parameter of RFC 6750 §2.3 that carries
// a bearer token. It exists for clients that can be given a URL but no
// header: the ACS Python adapters take only ACS_GUARDIAN_URL.
const accessTokenParam = "access_token"

// authenticate returns the caller a request comes from, or nil and why it
// is of none. An open endpoint has one anonymous caller. A bearer token,
// when sent (Authorization: Bearer, or the access_token query parameter,
// not both), must be a caller's; without one, a verified client
// certificate must be; sent both, they must name the same caller.
func (g *Gateway) authenticate(r *http.Request) (*Caller, string) {
	cs := g.cfg.Callers
	if cs == nil {
		return g.anonymous, ""
	}
	var leaf *x509.Certificate
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		leaf = r.TLS.VerifiedChains[0][0]
	}
	var byCert *Caller
	if leaf != nil {
		byCert = cs.byCert(leaf)
	}
	auth := r.Header.Get("Authorization")
	query, inQuery := r.URL.Query()[accessTokenParam]
	var token string
	switch {
	case auth != "" && inQuery:
		return nil, "a bearer token in both the Authorization header and the access_token parameter"
	case inQuery:
		if len(query) != 1 || query[0] == "" {
			return nil, "the access_token parameter is not one token"
		}
		token = query[0]
	case auth == "":
		switch {
		case byCert != nil:
			return byCert, ""
		case leaf != nil:
			return nil, "the client certificate is no caller's"
		}
		return nil, "no credentials"
	default:
		scheme, t, _ := strings.Cut(auth, " ")
		token = strings.TrimSpace(t)
		if !strings.EqualFold(scheme, "Bearer") || token == "" {
			return nil, "the Authorization header is not a bearer token"
		}
	}
	c := cs.byToken(token)
	switch {
	case c == nil:
		return nil, "unknown bearer token"
	case byCert != nil && byCert != c:
		return nil, "the bearer token and the client certificate are different callers'"
	}
	return c, ""
}

// unauthenticated answers 401 with a JSON-RPC error, without reading the
// body: nothing of a stranger's request reaches the Guardian or its
// streams. It is counted and logged (a burst a second at most) instead of
// dead-lettered.
func (g *Gateway) unauthenticated(w http.ResponseWriter, r *http.Request, why string) {
	g.stats.Unauthenticated.Add(1)
	g.unauthLog.Warn().Str("remote", r.RemoteAddr).Str("why", why).Uint64("unauthenticated_total", g.stats.Unauthenticated.Load()).
		Msg("HTTP request refused: no known caller")
	challenge := `Bearer realm="turnguard"`
	if r.Header.Get("Authorization") != "" || r.URL.Query().Has(accessTokenParam) {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	// Go's server would otherwise try to drain the unread body to keep the
	// connection; a stranger gets no such effort.
	w.Header().Set("Connection", "close")
	g.write(w, http.StatusUnauthorized, g.refuse(incoming{}, &acs.Error{Code: acs.CodeSessionRefused, Reason: acs.ReasonUnauthenticated,
		Message: "POST /acs needs a caller's bearer token (Authorization: Bearer …) or client certificate"}))
}
