package receipt

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"math/bits"
	"strconv"
	"strings"
	"sync"
)

// BatchDomain opens the message a batch receipt's signature signs:
//
//	turnguard-receipt-batch/1 LF size LF hex(root)
//
// where size is the number of leaves in decimal and root is the RFC 9162
// Merkle tree hash over the batch's leaves, a leaf hashing a nonce and the
// exact message a single receipt would sign (Message). It differs from
// Domain within its first 18 bytes, so that neither kind of
// signature can pass for the other.
const BatchDomain = "turnguard-receipt-batch/1"

// MaxBatchLeaves bounds a batch: a verifier refuses a receipt claiming a
// larger tree before it hashes anything.
const MaxBatchLeaves = 1 << 16

// maxPath is the longest inclusion path of a tree of MaxBatchLeaves.
const maxPath = 16

// NonceSize is the size of a leaf's nonce (leafNonce).
const NonceSize = 16

// Batch gathers the messages of the receipts of one batch of
// publications, for SignBatch to sign together: one Ed25519 signature over
// their Merkle root instead of one per message, each receipt carrying the
// path from its message to the root. The zero value is an empty batch.
type Batch struct {
	msgs [][]byte
}

// Add appends the message of a receipt of body (in its RFC 8785 form)
// under b, and returns its index: the position of its receipt in what
// SignBatch returns.
func (bt *Batch) Add(b Binding, canonical []byte) (int, error) {
	if len(bt.msgs) == MaxBatchLeaves {
		return 0, fmt.Errorf("a batch of receipts holds at most %d messages", MaxBatchLeaves)
	}
	m, err := Message(b, canonical)
	if err != nil {
		return 0, err
	}
	bt.msgs = append(bt.msgs, m)
	return len(bt.msgs) - 1, nil
}

// Len is the number of messages added.
func (bt *Batch) Len() int { return len(bt.msgs) }

// SignBatch returns the receipt of every message of bt, in the order they
// were added. A batch of one gets a single receipt, the same as
// SignCanonical's; a larger one gets batch receipts,
//
//	<signature>.<index>.<size>.<nonce>.<path>
//
// the base64 signature of the root message (BatchDomain), the leaf's index
// and the tree's size in decimal, the leaf's nonce and the inclusion path
// — the sibling hashes from the leaf up, concatenated — each in standard
// padded base64. The signature, the nonces and the tree are deterministic:
// the same messages in the same order give the same receipts.
func (s *Signer) SignBatch(bt *Batch) ([]string, error) {
	switch len(bt.msgs) {
	case 0:
		return nil, nil
	case 1:
		defer s.timed()()
		return []string{base64.StdEncoding.EncodeToString(ed25519.Sign(s.key, bt.msgs[0]))}, nil
	}
	defer s.timed()()
	n := len(bt.msgs)
	leaves := make([][sha256.Size]byte, n)
	nonces := make([][NonceSize]byte, n)
	mac, h := hmac.New(sha256.New, s.blind), sha256.New()
	for i, m := range bt.msgs {
		nonces[i] = leafNonce(mac, m)
		leaves[i] = leafHashWith(h, nonces[i][:], m)
	}
	// Every path fits in the tree's depth: one backing array for all.
	depth := bits.Len(uint(n - 1))
	hashes := make([][sha256.Size]byte, n*depth)
	paths := make([][][sha256.Size]byte, n)
	for i := range paths {
		paths[i] = hashes[i*depth : i*depth : (i+1)*depth]
	}
	root := treeHash(leaves, paths, 0, n)
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(s.key, rootMessage(uint64(n), root)))
	size := strconv.Itoa(n)
	out := make([]string, n)
	var b, raw []byte
	for i, path := range paths {
		raw = raw[:0]
		for _, h := range path {
			raw = append(raw, h[:]...)
		}
		b = append(b[:0], sig...)
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '.')
		b = append(b, size...)
		b = append(b, '.')
		b = base64.StdEncoding.AppendEncode(b, nonces[i][:])
		b = append(b, '.')
		b = base64.StdEncoding.AppendEncode(b, raw)
		out[i] = string(b)
	}
	return out, nil
}

// leafNonce is the nonce of message m's leaf: the first NonceSize bytes of
// HMAC-SHA256 of m under a key derived from the signing key (mac, reset
// here). A receipt shows the hashes of other messages of its batch —
// possibly other tenants' — and without a nonce anyone holding a guess of
// one of those messages could confirm it against them; only the signer
// can compute a nonce, and each message's receipt carries its own alone.
// Being derived from the message, not drawn at random, it keeps receipts
// deterministic.
func leafNonce(mac hash.Hash, m []byte) [NonceSize]byte {
	mac.Reset()
	mac.Write(m)
	var sum [sha256.Size]byte
	return [NonceSize]byte(mac.Sum(sum[:0]))
}

// leafHash is RFC 9162's hash of a leaf, the leaf being the nonce and the
// message: SHA-256(0x00 || nonce || message).
func leafHash(nonce, m []byte) [sha256.Size]byte { return leafHashWith(sha256.New(), nonce, m) }

// leafHashWith is leafHash with h, a SHA-256 it resets.
func leafHashWith(h hash.Hash, nonce, m []byte) [sha256.Size]byte {
	h.Reset()
	h.Write([]byte{0})
	h.Write(nonce)
	h.Write(m)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// nodeHash is RFC 9162's hash of an interior node: SHA-256(0x01 || l || r).
func nodeHash(l, r [sha256.Size]byte) [sha256.Size]byte {
	var buf [1 + 2*sha256.Size]byte
	buf[0] = 1
	copy(buf[1:], l[:])
	copy(buf[1+sha256.Size:], r[:])
	return sha256.Sum256(buf[:])
}

// treeHash is the Merkle tree hash of leaves[lo:hi] (RFC 9162 2.1.1: the
// left subtree holds the largest power of two below the count), adding to
// the path of each leaf below the sibling it needs at this level; deeper
// levels are added first, so each path runs from its leaf up.
func treeHash(leaves [][sha256.Size]byte, paths [][][sha256.Size]byte, lo, hi int) [sha256.Size]byte {
	n := hi - lo
	if n == 1 {
		return leaves[lo]
	}
	k := 1 << (bits.Len(uint(n-1)) - 1)
	l := treeHash(leaves, paths, lo, lo+k)
	r := treeHash(leaves, paths, lo+k, hi)
	for i := lo; i < lo+k; i++ {
		paths[i] = append(paths[i], r)
	}
	for i := lo + k; i < hi; i++ {
		paths[i] = append(paths[i], l)
	}
	return nodeHash(l, r)
}

// rootMessage is what a batch receipt's signature signs: the tree's size
// and root. The size is signed because an inclusion path alone does not
// fix it (a leaf's path in a tree of 7 is its path in one of 8).
func rootMessage(size uint64, root [sha256.Size]byte) []byte {
	m := make([]byte, 0, len(BatchDomain)+8+2*sha256.Size)
	m = append(m, BatchDomain...)
	m = append(m, '\n')
	m = strconv.AppendUint(m, size, 10)
	m = append(m, '\n')
	return hex.AppendEncode(m, root[:])
}

// proof is a parsed receipt: a signature, and for a batch receipt where
// its message sits in the signed tree.
type proof struct {
	sig         []byte
	batch       bool
	index, size uint64
	nonce       []byte
	path        [][sha256.Size]byte
}

// maxEncodedLen bounds a receipt's text before anything is decoded: the
// signature, two numbers of at most 5 digits, and the longest path.
var maxEncodedLen = encodedLen + 4 + 2*5 + base64.StdEncoding.EncodedLen(NonceSize) + base64.StdEncoding.EncodedLen(maxPath*sha256.Size)

// parse reads a single or a batch receipt. It refuses anything malformed
// or over the bounds before decoding it.
func parse(receipt string) (proof, error) {
	if receipt == "" {
		return proof{}, ErrMissing
	}
	if len(receipt) > maxEncodedLen {
		return proof{}, fmt.Errorf("%w: %d characters, at most %d", ErrMalformed, len(receipt), maxEncodedLen)
	}
	sigText, rest, batch := strings.Cut(receipt, ".")
	sig, err := decode(sigText)
	if err != nil || !batch {
		return proof{sig: sig}, err
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 4 {
		return proof{}, fmt.Errorf("%w: a batch receipt is <signature>.<index>.<size>.<nonce>.<path>", ErrMalformed)
	}
	p := proof{sig: sig, batch: true}
	if p.index, err = decimal(parts[0]); err == nil {
		p.size, err = decimal(parts[1])
	}
	if err != nil {
		return proof{}, err
	}
	if p.size < 2 || p.size > MaxBatchLeaves || p.index >= p.size {
		return proof{}, fmt.Errorf("%w: leaf %d of a batch of %d", ErrMalformed, p.index, p.size)
	}
	if p.nonce, err = base64.StdEncoding.Strict().DecodeString(parts[2]); err != nil || len(p.nonce) != NonceSize {
		return proof{}, fmt.Errorf("%w: the nonce is not %d bytes of base64", ErrMalformed, NonceSize)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(parts[3])
	if err != nil || len(raw)%sha256.Size != 0 || len(raw)/sha256.Size > maxPath {
		return proof{}, fmt.Errorf("%w: the inclusion path is not up to %d base64 SHA-256 hashes", ErrMalformed, maxPath)
	}
	for i := 0; i < len(raw); i += sha256.Size {
		p.path = append(p.path, [sha256.Size]byte(raw[i:i+sha256.Size]))
	}
	return p, nil
}

// decimal reads a receipt's index or size: digits only, no leading zeros.
func decimal(s string) (uint64, error) {
	if s == "" || len(s) > 5 || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%w: %q is not a decimal index or size", ErrMalformed, s)
	}
	return strconv.ParseUint(s, 10, 32)
}

// signed is what p's signature must sign for a receipt of message m: m
// itself, or for a batch receipt the root m's inclusion path leads to.
// A path that leads nowhere (too short, too long for the tree) is a
// mismatch.
func (p proof) signed(m []byte) ([]byte, bool) {
	if !p.batch {
		return m, true
	}
	// RFC 9162 2.1.3.2, verifying an inclusion proof.
	fn, sn := p.index, p.size-1
	r := leafHash(p.nonce, m)
	for _, h := range p.path {
		if sn == 0 {
			return nil, false
		}
		if fn&1 == 1 || fn == sn {
			r = nodeHash(h, r)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = nodeHash(r, h)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return nil, false
	}
	return rootMessage(p.size, r), true
}

// RootCache remembers the batch signatures it saw verify, so that the
// other messages of a batch cost the hashes of their paths rather than an
// Ed25519 verification each. What it keeps is the hash of key, signed root
// message and signature: finding it again means that exact signature
// verified for that exact message under that key, which Ed25519 answers
// the same way every time. It is safe for concurrent use and bounded
// (it starts over when full).
type RootCache struct {
	mu   sync.Mutex
	seen map[[sha256.Size]byte]struct{}
}

// rootCacheSize bounds a RootCache: a few batches of every partition.
const rootCacheSize = 4096

// NewRootCache returns an empty cache.
func NewRootCache() *RootCache {
	return &RootCache{seen: make(map[[sha256.Size]byte]struct{})}
}

// verify is ed25519.Verify of sig over signed under pub, answered from
// the cache for a batch root it saw verify (c may be nil: no cache).
func (c *RootCache) verify(pub ed25519.PublicKey, signed, sig []byte, batch bool) bool {
	if c == nil || !batch {
		return ed25519.Verify(pub, signed, sig)
	}
	h := sha256.New()
	h.Write(pub)
	h.Write(sig)
	h.Write(signed)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	c.mu.Lock()
	_, ok := c.seen[key]
	c.mu.Unlock()
	if ok {
		return true
	}
	if !ed25519.Verify(pub, signed, sig) {
		return false
	}
	c.mu.Lock()
	if len(c.seen) >= rootCacheSize {
		clear(c.seen)
	}
	c.seen[key] = struct{}{}
	c.mu.Unlock()
	return true
}
