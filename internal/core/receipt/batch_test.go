package receipt_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/receipt"
)

// batchOf adds n decisions of sessionA, seq 1..n, each with its own body,
// and returns their bindings and bodies.
func batchOf(t testing.TB, n int) (*receipt.Batch, []receipt.Binding, [][]byte) {
	t.Helper()
	var bt receipt.Batch
	bs := make([]receipt.Binding, n)
	bodies := make([][]byte, n)
	for i := range n {
		bs[i] = receipt.Decision("default", sessionA, uint64(i+1))
		bodies[i] = []byte(fmt.Sprintf(`{"id":"r%d","jsonrpc":"2.0","result":{"decision":"allow","type":"final"}}`, i))
		idx, err := bt.Add(bs[i], bodies[i])
		if err != nil || idx != i {
			t.Fatalf("Add %d: index %d, %v", i, idx, err)
		}
	}
	return &bt, bs, bodies
}

// mth is RFC 9162's Merkle tree hash written from its definition, apart
// from the package's: the check the tree is the standard one.
func mth(leaves [][]byte) []byte {
	if len(leaves) == 1 {
		h := sha256.Sum256(append([]byte{0}, leaves[0]...))
		return h[:]
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	h := sha256.Sum256(append(append([]byte{1}, mth(leaves[:k])...), mth(leaves[k:])...))
	return h[:]
}

// TestBatchReceipts: every receipt of a batch verifies for its own body
// and binding, with Verify and Trusted; a batch of one is a single
// receipt; the root the signature covers is RFC 9162's tree hash over the
// single receipts' messages.
func TestBatchReceipts(t *testing.T) {
	s := kat()
	trusted, err := receipt.NewTrusted(s.Public())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 33, 100, 255, 256, 257} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			bt, bs, bodies := batchOf(t, n)
			rcs, err := s.SignBatch(bt)
			if err != nil || len(rcs) != n {
				t.Fatalf("SignBatch: %d receipts, %v", len(rcs), err)
			}
			for i, rc := range rcs {
				if err := receipt.Verify(s.Public(), bs[i], bodies[i], rc); err != nil {
					t.Fatalf("receipt %d of %d: %v", i, n, err)
				}
				if id, err := trusted.Verify(s.KeyID, bs[i], bodies[i], rc); err != nil || id != s.KeyID {
					t.Fatalf("Trusted, receipt %d of %d: %q %v", i, n, id, err)
				}
			}
			if n == 1 {
				single, err := s.SignCanonical(bs[0], bodies[0])
				if err != nil || rcs[0] != single {
					t.Fatalf("a batch of one: %q, want the single receipt %q (%v)", rcs[0], single, err)
				}
				return
			}
			// A leaf is the receipt's nonce and the single receipt's message.
			msgs := make([][]byte, n)
			for i := range msgs {
				m, _ := receipt.Message(bs[i], bodies[i])
				msgs[i] = append(mustB64(t, strings.Split(rcs[i], ".")[3]), m...)
			}
			sig, _ := base64.StdEncoding.DecodeString(strings.Split(rcs[0], ".")[0])
			root := receipt.BatchDomain + "\n" + strconv.Itoa(n) + "\n" + hex.EncodeToString(mth(msgs))
			if !ed25519.Verify(s.Public(), []byte(root), sig) {
				t.Fatalf("the signature does not cover RFC 9162's root %s", root)
			}
		})
	}
}

// TestBatchReceiptForgeries: a batch receipt fits its own message and
// nothing else — not another message of the batch, another index or size,
// a path cut, lengthened or changed, a receipt of another batch, nor
// read as a single receipt.
func TestBatchReceiptForgeries(t *testing.T) {
	s := kat()
	bt, bs, bodies := batchOf(t, 7)
	rcs, err := s.SignBatch(bt)
	if err != nil {
		t.Fatal(err)
	}
	var other receipt.Batch
	for i := range 9 {
		if _, err := other.Add(receipt.Decision("default", sessionB, uint64(i+1)), bodies[i%len(bodies)]); err != nil {
			t.Fatal(err)
		}
	}
	others, err := s.SignBatch(&other)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(rcs[2], ".")
	nonce, path := parts[3], mustB64(t, parts[4])
	flipped := append([]byte(nil), path...)
	flipped[5] ^= 1
	b64 := base64.StdEncoding.EncodeToString
	join := func(p ...string) string { return strings.Join(p, ".") }
	tests := []struct {
		name    string
		rc      string
		wantErr error
	}{
		{"another leaf's receipt", rcs[3], receipt.ErrMismatch},
		{"another index", join(parts[0], "3", parts[2], nonce, parts[4]), receipt.ErrMismatch},
		{"another size", join(parts[0], parts[1], "8", nonce, parts[4]), receipt.ErrMismatch},
		{"a smaller size", join(parts[0], parts[1], "4", nonce, parts[4]), receipt.ErrMismatch},
		{"another leaf's nonce", join(parts[0], parts[1], parts[2], strings.Split(rcs[3], ".")[3], parts[4]), receipt.ErrMismatch},
		{"no nonce", join(parts[0], parts[1], parts[2], b64(make([]byte, receipt.NonceSize)), parts[4]), receipt.ErrMismatch},
		{"the path cut short", join(parts[0], parts[1], parts[2], nonce, b64(path[:len(path)-32])), receipt.ErrMismatch},
		{"the path lengthened", join(parts[0], parts[1], parts[2], nonce, b64(append(append([]byte(nil), path...), path[:32]...))), receipt.ErrMismatch},
		{"a hash of the path changed", join(parts[0], parts[1], parts[2], nonce, b64(flipped)), receipt.ErrMismatch},
		{"another batch's receipt at the same index", others[2], receipt.ErrMismatch},
		{"the signature alone", parts[0], receipt.ErrMismatch},
		{"index not below size", join(parts[0], "7", parts[2], nonce, parts[4]), receipt.ErrMalformed},
		{"a size of one", join(parts[0], "0", "1", nonce, ""), receipt.ErrMalformed},
		{"a leading zero", join(parts[0], "02", parts[2], nonce, parts[4]), receipt.ErrMalformed},
		{"a size over the bound", join(parts[0], parts[1], "99999", nonce, parts[4]), receipt.ErrMalformed},
		{"a negative index", join(parts[0], "-2", parts[2], nonce, parts[4]), receipt.ErrMalformed},
		{"a short nonce", join(parts[0], parts[1], parts[2], b64(make([]byte, 8)), parts[4]), receipt.ErrMalformed},
		{"a path not of hashes", join(parts[0], parts[1], parts[2], nonce, b64(path[:40])), receipt.ErrMalformed},
		{"a path not base64", join(parts[0], parts[1], parts[2], nonce, "!!"), receipt.ErrMalformed},
		{"a field missing", join(parts[0], parts[1], parts[2], parts[4]), receipt.ErrMalformed},
		{"a field too many", join(rcs[2], "x"), receipt.ErrMalformed},
		{"too long to read", rcs[2] + strings.Repeat("A", 1000), receipt.ErrMalformed},
	}
	// A cache that saw every genuine receipt of both batches verify must
	// not let any forgery through either.
	warm := receipt.NewRootCache()
	for i, rc := range rcs {
		if err := warm.Verify(s.Public(), bs[i], bodies[i], rc); err != nil {
			t.Fatal(err)
		}
	}
	for i, rc := range others {
		if err := warm.Verify(s.Public(), receipt.Decision("default", sessionB, uint64(i+1)), bodies[i%len(bodies)], rc); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := receipt.Verify(s.Public(), bs[2], bodies[2], tc.rc); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Verify: %v, want %v", err, tc.wantErr)
			}
			if err := warm.Verify(s.Public(), bs[2], bodies[2], tc.rc); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Verify with a warm cache: %v, want %v", err, tc.wantErr)
			}
		})
	}
	// The genuine receipt fits only its own binding and body.
	if err := receipt.Verify(s.Public(), receipt.Decision("default", sessionA, 4), bodies[2], rcs[2]); !errors.Is(err, receipt.ErrMismatch) {
		t.Fatalf("another sequence: %v", err)
	}
	if err := receipt.Verify(s.Public(), bs[2], bodies[3], rcs[2]); !errors.Is(err, receipt.ErrMismatch) {
		t.Fatalf("another body: %v", err)
	}
	// A single receipt with a path added is no batch receipt.
	single, _ := s.SignCanonical(bs[2], bodies[2])
	if err := receipt.Verify(s.Public(), bs[2], bodies[2], join(single, parts[1], parts[2], nonce, parts[4])); !errors.Is(err, receipt.ErrMismatch) {
		t.Fatalf("a single receipt with a path: %v", err)
	}
}

// TestBatchKnownAnswer pins a batch of three: the signed root message and
// the receipts of a fixed key and bodies. The nonces and the root were
// computed apart from this package (Python's hmac and hashlib, RFC 9162)
// and the signature checked with openssl pkeyutl -verify -rawin; see
// docs/RECEIPTS.md.
func TestBatchKnownAnswer(t *testing.T) {
	s := kat()
	var bt receipt.Batch
	for seq := uint64(6); seq <= 8; seq++ {
		c, err := acs.CanonicalRaw([]byte(katBody))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bt.Add(receipt.Decision("default", sessionB, seq), c); err != nil {
			t.Fatal(err)
		}
	}
	rcs, err := s.SignBatch(&bt)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rcs, "\n") != katBatch {
		t.Fatalf("receipts\n%s\nwant\n%s", strings.Join(rcs, "\n"), katBatch)
	}
	for i, rc := range rcs {
		if err := receipt.Verify(s.Public(), receipt.Decision("default", sessionB, uint64(6+i)), []byte(katBody), rc); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	s := kat()
	c, err := acs.CanonicalRaw([]byte(katBody))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("single/%d", n), func(b *testing.B) {
			for b.Loop() {
				for seq := range n {
					if _, err := s.SignCanonical(receipt.Decision("default", sessionA, uint64(seq+1)), c); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/receipt")
		})
		b.Run(fmt.Sprintf("batch/%d", n), func(b *testing.B) {
			for b.Loop() {
				var bt receipt.Batch
				for seq := range n {
					if _, err := bt.Add(receipt.Decision("default", sessionA, uint64(seq+1)), c); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := s.SignBatch(&bt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/receipt")
		})
	}
}

// katBatch is TestBatchKnownAnswer's three receipts, one per line; the
// root they sign (size 3) is c31e0b52bbf101cb3f89f34ef50ddba37564133f763d8d883d3b0d90884af43f,
// and the nonces are HMAC-SHA256 of each message under
// SHA-256("turnguard-receipt-blind/1\n" || seed), cut to 16 bytes.
const katBatch = "55KUlLoFi0Wypsz90BdEs7FLdLdReWsVQunBLUdssUE7cBZV/R+CzMzdfnssAXX3bG1Lz80gdHKzJQ4QXVHcAg==.0.3.rBe/kVEQqWnlA2NbSvdPAA==.9bpbCKegLHBSXp+RpZcu3xoum52pQaiPotqanccE9BTfaxvD5QOWKzOzWvZg2ejvtamKLSqPWuRUsKHZUGIiog==\n" +
	"55KUlLoFi0Wypsz90BdEs7FLdLdReWsVQunBLUdssUE7cBZV/R+CzMzdfnssAXX3bG1Lz80gdHKzJQ4QXVHcAg==.1.3.s+fQ8v/m2ZsDMdDJv+9g7w==.BPboPBoBs0/G9WX4QIR+STstZ+4Eh+U+CykpMViaYvHfaxvD5QOWKzOzWvZg2ejvtamKLSqPWuRUsKHZUGIiog==\n" +
	"55KUlLoFi0Wypsz90BdEs7FLdLdReWsVQunBLUdssUE7cBZV/R+CzMzdfnssAXX3bG1Lz80gdHKzJQ4QXVHcAg==.2.3.fYimCOP5Oy5wmyKNAycltg==.DWBcoPFUFURtfT0DaUW9dwm5FHX6n/klByYV8TA8aiM="

func BenchmarkVerifyBatch(b *testing.B) {
	s := kat()
	bt, bs, bodies := batchOf(b, 256)
	rcs, err := s.SignBatch(bt)
	if err != nil {
		b.Fatal(err)
	}
	for _, cached := range []bool{false, true} {
		b.Run(map[bool]string{false: "uncached", true: "cached"}[cached], func(b *testing.B) {
			c := receipt.NewRootCache()
			if !cached {
				c = nil
			}
			i := 0
			for b.Loop() {
				if err := c.Verify(s.Public(), bs[i%256], bodies[i%256], rcs[i%256]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
