package client

import (
	"crypto/ed25519"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// FuzzCheck feeds what an untrusted message on a decision subject carries
// — Acs-Stream-Seq, Acs-Receipt, Acs-Receipt-Key, Acs-Request-Id and the
// body — to the check deliver and lookup apply. Nothing may panic, and
// only the genuine receipt of the genuine body at its own sequence may
// pass.
func FuzzCheck(f *testing.F) {
	const session, request = "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70", "b2d8f1a0-6c3e-4d5f-9a7b-1e2f3a4b5c06"
	signer := receipt.NewSigner(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	body := `{"jsonrpc":"2.0","id":"x","result":{"type":"final","acs_version":"0.1.0","request_id":"` + request + `","decision":"deny"}}`
	rc, err := signer.Sign(receipt.Decision("default", session, 9), json.RawMessage(body))
	if err != nil {
		f.Fatal(err)
	}
	trusted, err := receipt.NewTrusted(signer.Public())
	if err != nil {
		f.Fatal(err)
	}
	c := &Client{opt: Options{Tenant: "default"}, trusted: trusted}
	f.Add("9", rc, signer.KeyID, request, body)
	f.Add("10", rc, signer.KeyID, request, body)
	f.Add("09", rc, "", request, body)
	f.Add("+9", "AAAA", "", request, `{"result":{"decision":"allow"}}`)
	f.Add("18446744073709551616", rc, signer.KeyID, "", "null")
	f.Fuzz(func(t *testing.T, seq, rcpt, keyID, requestID, data string) {
		h := nats.Header{}
		h.Set(acs.HdrStreamSeq, seq)
		h.Set(acs.HdrReceipt, rcpt)
		h.Set(acs.HdrReceiptKey, keyID)
		h.Set(acs.HdrRequestID, requestID)
		a, err := c.check(session, requestOf(h), h, []byte(data))
		if err != nil {
			return
		}
		canon, cerr := acs.CanonicalRaw([]byte(data))
		want, _ := acs.CanonicalRaw([]byte(body))
		if a.seq != 9 || seq != strconv.Itoa(9) || rcpt != rc || cerr != nil || string(canon) != string(want) || a.keyID != signer.KeyID {
			t.Fatalf("accepted seq %q receipt %q key %q body %q", seq, rcpt, keyID, data)
		}
		if requestOf(h) != request {
			// The body answers request; a message routed to another
			// request id must have been refused.
			t.Fatalf("accepted for request %q a body answering %s", requestOf(h), request)
		}
	})
}
