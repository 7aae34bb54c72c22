package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles names the PEM files of the endpoint's TLS.
type TLSFiles struct {
	Cert, Key string
	// ClientCA, when set, is the bundle client certificates are verified
	// against.
	ClientCA string
	// RequireClientCert demands a certificate of every client (mTLS is the
	// only caller authentication); otherwise a client may present one or
	// a bearer token instead.
	RequireClientCert bool
}

// ServerTLS builds the endpoint's TLS configuration: TLS 1.2 at least, and
// with a client CA, client certificates asked for and verified.
func ServerTLS(f TLSFiles) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("--http-tls-cert/--http-tls-key: %w", err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if f.ClientCA == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(f.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("--http-client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("--http-client-ca: no PEM certificate in " + f.ClientCA)
	}
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	if f.RequireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}
