package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/turnguard/turnguard/internal/core/receipt"
)

// TestAgreesWithTheSigner: this verifier, written from the documentation
// alone, accepts every receipt turnguard's signer makes — single, and
// every leaf of batches of many sizes — and refuses each for another
// sequence, subject or body.
func TestAgreesWithTheSigner(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := receipt.NewSigner(priv)
	pub := s.Public()
	const subject = "acs.decisions.default.7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70"
	for _, n := range []int{1, 2, 3, 5, 8, 13, 64, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var bt receipt.Batch
			bodies := make([][]byte, n)
			for i := range n {
				// Published bodies are canonical already; a verifier
				// canonicalises anyway, so this one is not.
				bodies[i] = fmt.Appendf(nil, `{"result": {"type": "final", "decision": "allow"}, "id": "r%d", "jsonrpc": "2.0"}`, i)
				c := fmt.Appendf(nil, `{"id":"r%d","jsonrpc":"2.0","result":{"decision":"allow","type":"final"}}`, i)
				if _, err := bt.Add(receipt.Decision("default", "7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70", uint64(i+1)), c); err != nil {
					t.Fatal(err)
				}
			}
			rcs, err := s.SignBatch(&bt)
			if err != nil {
				t.Fatal(err)
			}
			for i, rc := range rcs {
				seq := uint64(i + 1)
				if err := verify(pub, "decision", subject, seq, bodies[i], rc); err != nil {
					t.Fatalf("receipt %d of %d: %v", i, n, err)
				}
				if verify(pub, "decision", subject, seq+1, bodies[i], rc) == nil ||
					verify(pub, "alert", subject, seq, bodies[i], rc) == nil ||
					verify(pub, "decision", subject+"0", seq, bodies[i], rc) == nil ||
					verify(pub, "decision", subject, seq, bodies[(i+1)%n], rc) == nil && n > 1 {
					t.Fatalf("receipt %d of %d verifies for what it was not made for", i, n)
				}
			}
		})
	}
}
