package integration

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHTTPEndpointTLS runs the binary's endpoint over TLS with client
// certificates and bearer tokens side by side: a token caller and a
// certificate caller are both served (https negotiated), a client with
// neither is 401, and a plain-HTTP client gets nothing. The certificates
// are made here.
func TestHTTPEndpointTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := testCA(t)
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", ca.Raw)
	server := issue(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "turnguard"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	writePEM(t, filepath.Join(dir, "server.pem"), "CERTIFICATE", server.Certificate[0])
	keyDER, err := x509.MarshalPKCS8PrivateKey(server.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "server-key.pem"), "PRIVATE KEY", keyDER)
	ci := issue(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "ci"},
		URIs: []*url.URL{{Scheme: "spiffe", Host: "acme.example", Path: "/ci"}}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})

	token := "tgt_integration-token-over-tls"
	callers := fmt.Sprintf("callers:\n  - {name: laptop, tenant: acme, token_sha256: %x}\n  - {name: ci, tenant: acme, cert_uri: \"spiffe://acme.example/ci\"}\n",
		sha256.Sum256([]byte(token)))
	if err := os.WriteFile(filepath.Join(dir, "callers.yaml"), []byte(callers), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcessor(t, "--listen", "none", "--http", "127.0.0.1:0", "--skew-window", "5m", "--http-tokens", filepath.Join(dir, "callers.yaml"),
		"--http-tls-cert", filepath.Join(dir, "server.pem"), "--http-tls-key", filepath.Join(dir, "server-key.pem"),
		"--http-client-ca", filepath.Join(dir, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs}}}
	}
	addr := addrOf(t, p, httpListener)
	base := "https://" + addr
	poll(t, 20*time.Second, "GET /readyz over TLS", func() bool {
		resp, err := client().Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !strings.Contains(p.out.String(), `"url":"https://`+addr+`/acs"`) {
		t.Errorf("the start log does not announce https:\n%s", p.out)
	}
	hello := func(c *http.Client, token string) (int, reply) {
		t.Helper()
		sid := newUUID()
		ch := clientHello("steps/sessionStart")
		ch["transports_supported"] = strs("http", "https")
		body := newEnvelope("handshake/hello", sid, "agent", ch).bytes()
		req, err := http.NewRequest(http.MethodPost, base+"/acs", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		r, err := parseReply(raw, resp.Header)
		if err != nil {
			t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
		}
		return resp.StatusCode, r
	}
	for _, tc := range []struct {
		name   string
		client *http.Client
		token  string
	}{
		{"bearer token", client(), token},
		{"client certificate", client(ci), ""},
	} {
		status, r := hello(tc.client, tc.token)
		if status != http.StatusOK || r.str("result.selected_transport") != "https" {
			t.Errorf("%s: HTTP %d %s, want a ServerHello selecting https", tc.name, status, r)
		}
	}
	if status, r := hello(client(), ""); status != http.StatusUnauthorized || r.str("error.data.reason") != "unauthenticated" {
		t.Errorf("no credentials: HTTP %d %s", status, r)
	}
	if resp, err := http.Post("http://"+addr+"/acs", "application/json", strings.NewReader(`{}`)); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP to the TLS endpoint answered 200")
		}
		resp.Body.Close()
	}
	p.stop(t)
}

// TestHTTPEndpointRefusedAtStart: the binary will not serve an endpoint
// that would be open or would carry tokens in clear.
func TestHTTPEndpointRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "callers.yaml")
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("callers:\n  - {name: a, tenant: acme, token_sha256: %x}\n", sha256.Sum256([]byte("t")))), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"no caller authentication", "--http-tokens FILE", []string{"--http", "127.0.0.1:0"}},
		{"tokens in clear on every interface", "without TLS", []string{"--http", "0.0.0.0:0", "--http-tokens", tokens}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, "processor", append([]string{"--listen", "none", "--data-dir", t.TempDir()}, tc.args...)...)
			if code := p.wait(t, 20*time.Second); code != 2 || !strings.Contains(p.out.String(), tc.want) {
				t.Fatalf("exit %d, want 2 naming %q:\n%s", code, tc.want, p.out)
			}
		})
	}
}

func testCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "integration CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

var serial int64 = 1

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
