// Command verify-receipt checks one turnguard receipt offline, from the
// public key alone, the way docs/RECEIPTS.md describes it. It is written
// apart from turnguard's own code (only the standard library and an
// RFC 8785 canonicaliser), as a template for verifiers in other languages.
//
//	verify-receipt --key receipt-key.pub --kind decision \
//	    --subject acs.decisions.default.<session> --seq 6 \
//	    --receipt "$ACS_RECEIPT" < decision.json
//
// The subject and sequence are what the verifier expects — the subject it
// subscribed to, the sequence of the envelope it published — never values
// read from the message. Exit status 0: verified; 1: not; 2: usage.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

func main() {
	keyFile := flag.String("key", "", "the processor's receipt public key (PEM)")
	kind := flag.String("kind", "decision", "decision, alert or endpoint")
	subject := flag.String("subject", "", "the subject the message came on")
	seq := flag.Uint64("seq", 0, "the ACS_HOOKS sequence of the envelope it must answer")
	rcpt := flag.String("receipt", "", "the Acs-Receipt header")
	flag.Parse()
	if *keyFile == "" || *rcpt == "" {
		flag.Usage()
		os.Exit(2)
	}
	pub, err := loadKey(*keyFile)
	if err == nil {
		var body []byte
		if body, err = io.ReadAll(os.Stdin); err == nil {
			err = verify(pub, *kind, *subject, *seq, body, *rcpt)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "not verified:", err)
		os.Exit(1)
	}
	fmt.Println("verified")
}

func loadKey(path string) (ed25519.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, errors.New("no PEM block in the key file")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("not an Ed25519 public key")
	}
	return pub, nil
}

// verify checks a single receipt (88 characters of base64) or a batch
// receipt (<signature>.<index>.<size>.<nonce>.<path>).
func verify(pub ed25519.PublicKey, kind, subject string, seq uint64, body []byte, rcpt string) error {
	canonical := jsontext.Value(bytes.Clone(body))
	if err := canonical.Canonicalize(); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	// The message a single receipt signs.
	msg := fmt.Appendf(nil, "turnguard-receipt/1\n%s\n%s\n%d\n", kind, subject, seq)
	msg = append(msg, canonical...)

	parts := strings.Split(rcpt, ".")
	sig, err := base64.StdEncoding.DecodeString(parts[0])
	if err != nil || len(sig) != ed25519.SignatureSize {
		return errors.New("the signature is not 64 bytes of base64")
	}
	signed := msg
	switch len(parts) {
	case 1:
	case 5:
		if signed, err = batchRoot(msg, parts[1], parts[2], parts[3], parts[4]); err != nil {
			return err
		}
	default:
		return errors.New("neither a single nor a batch receipt")
	}
	if !ed25519.Verify(pub, signed, sig) {
		return errors.New("the signature does not match")
	}
	return nil
}

// batchRoot follows a leaf's inclusion path to the root (RFC 9162,
// 2.1.3.2) and returns the message the batch signature signs.
func batchRoot(msg []byte, index, size, nonce, path string) ([]byte, error) {
	fn, err1 := strconv.ParseUint(index, 10, 32)
	n, err2 := strconv.ParseUint(size, 10, 32)
	salt, err3 := base64.StdEncoding.DecodeString(nonce)
	hashes, err4 := base64.StdEncoding.DecodeString(path)
	if err := errors.Join(err1, err2, err3, err4); err != nil || fn >= n || len(salt) != 16 || len(hashes)%sha256.Size != 0 {
		return nil, errors.New("a malformed batch receipt")
	}
	// The leaf: 0x00, the nonce, then the message a single receipt signs.
	r := sha256.Sum256(append(append([]byte{0}, salt...), msg...))
	sn := n - 1
	for i := 0; i < len(hashes); i += sha256.Size {
		p := hashes[i : i+sha256.Size]
		if sn == 0 {
			return nil, errors.New("the inclusion path is too long")
		}
		if fn&1 == 1 || fn == sn {
			r = sha256.Sum256(append(append([]byte{1}, p...), r[:]...))
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = sha256.Sum256(append(append([]byte{1}, r[:]...), p...))
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return nil, errors.New("the inclusion path is too short")
	}
	return fmt.Appendf(nil, "turnguard-receipt-batch/1\n%d\n%s", n, hex.EncodeToString(r[:])), nil
}
