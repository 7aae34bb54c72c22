package turnstate

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"sync"
)

// StateKeySize is the size of a state key the processor creates, and the
// least it accepts: HMAC-SHA256 gains nothing from more.
const StateKeySize = 32

// Sealer authenticates stored values with HMAC-SHA256 under the state key,
// a secret only processors hold. Anyone who can write to the state bucket
// (a NATS user with access to $KV.ACS_TURNSTATE.>) could otherwise edit a
// session — remove its taints, forge its outbox — or copy one session's
// value under another's key; with the MAC, a value the processor did not
// write for exactly that key does not verify. It is safe for concurrent use.
//
// The Sealer stays here, next to the states, while the bucket access lives
// in internal/statestore: it is pure crypto over bytes (no NATS), the MAC
// binds this package's kinds of state, and the processor's member records
// are sealed with it too, so it belongs to no one store.
type Sealer struct {
	pool sync.Pool
}

// NewSealer returns a sealer for key, which must hold at least
// StateKeySize bytes.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) < StateKeySize {
		return nil, fmt.Errorf("state key has %d bytes, need at least %d", len(key), StateKeySize)
	}
	k := bytes.Clone(key)
	// hmac.New allocates and hashes the padded key; a pool of reset MACs
	// saves that on every value.
	return &Sealer{pool: sync.Pool{New: func() any { return hmac.New(sha256.New, k) }}}, nil
}

// What a stored value looks like: the MAC in lowercase hex, then the record
// exactly as it was marshalled. The layout is fixed so that a value is
// checked by slicing, before any of it is parsed; anything else — values of
// earlier versions without a MAC, reformatted or edited JSON — does not
// verify.
const (
	sealPrefix = `{"mac":"`
	sealMiddle = `","record":`
	sealSuffix = `}`
	macHexLen  = 2 * sha256.Size
	sealLen    = len(sealPrefix) + macHexLen + len(sealMiddle) + len(sealSuffix)
)

// Kinds of stored values, bound into their MACs.
const (
	KindSession = "session"
	KindAgent   = "agent"
)

// Reasons a value does not verify (statestore.IntegrityError.Reason, and the
// alerts about it).
const (
	ReasonNotSealed  = "mac_missing"
	ReasonBadMAC     = "mac_invalid"
	ReasonNotDecoded = "record_undecodable"
	// ReasonRolledBack is a value that verifies but is older than what the
	// processor already published for the session (internal/stream).
	ReasonRolledBack = "stale_value"
	// ReasonDeleted is a key whose value was deleted or purged (a KV
	// delete or purge marker stands in its place): no processor does that,
	// so the state was taken away, taints and all.
	ReasonDeleted = "deleted"
)

// mac computes the MAC of a record stored under key. The kind (session or
// agent) and the key are bound into it, separated by bytes no key holds, so
// a valid value moved to another key, or read as the other kind, does not
// verify.
func (s *Sealer) mac(kind, key string, record []byte, dst []byte) []byte {
	h := s.pool.Get().(hash.Hash)
	h.Reset()
	h.Write([]byte("turnguard.state.v1\x00"))
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write(record)
	dst = h.Sum(dst)
	s.pool.Put(h)
	return dst
}

// Seal returns the stored form of a marshalled record: one allocation, the
// record copied once.
func (s *Sealer) Seal(kind, key string, record []byte) []byte {
	out := make([]byte, SealHeadLen, sealLen+len(record))
	out = append(out, record...)
	out = append(out, sealSuffix...)
	s.SealInPlace(kind, key, out)
	return out
}

// SealHeadLen is the room a value keeps before its record for
// SealInPlace to fill: the MAC and the layout around it.
const SealHeadLen = len(sealPrefix) + macHexLen + len(sealMiddle)

// SealInPlace seals a value laid out for it — SealHeadLen bytes of room,
// the marshalled record, then one byte of room — by writing the head and
// the closing byte around the record: Seal without the copy, for a caller
// that encodes records into buffers of its own.
func (s *Sealer) SealInPlace(kind, key string, value []byte) {
	var sum [sha256.Size]byte
	m := s.mac(kind, key, value[SealHeadLen:len(value)-len(sealSuffix)], sum[:0])
	copy(value, sealPrefix)
	hex.Encode(value[len(sealPrefix):], m)
	copy(value[len(sealPrefix)+macHexLen:], sealMiddle)
	copy(value[len(value)-len(sealSuffix):], sealSuffix)
}

// Open verifies a stored value written under key and returns its record
// (a sub-slice of value). A value that does not verify is reported by
// reason: ReasonNotSealed when it does not have the sealed layout at all,
// ReasonBadMAC when its MAC is not the record's under this key.
func (s *Sealer) Open(kind, key string, value []byte) (record []byte, reason string) {
	macHex, record, ok := Unseal(value)
	if !ok {
		return nil, ReasonNotSealed
	}
	var want [sha256.Size]byte
	got := s.mac(kind, key, record, want[:0])
	var have [sha256.Size]byte
	if _, err := hex.Decode(have[:], macHex); err != nil {
		return nil, ReasonBadMAC
	}
	if !hmac.Equal(got, have[:]) {
		return nil, ReasonBadMAC
	}
	return record, ""
}

// Unseal splits a stored value into its MAC (hex) and its record without
// verifying anything: for tools that only read the bucket (loadgen's
// reconciliation, tests) and hold no key. ok is false when the value does
// not have the sealed layout. The processor never trusts a record it got
// this way.
func Unseal(value []byte) (macHex, record []byte, ok bool) {
	if len(value) < sealLen+1 || !bytes.HasPrefix(value, []byte(sealPrefix)) || !bytes.HasSuffix(value, []byte(sealSuffix)) {
		return nil, nil, false
	}
	rest := value[len(sealPrefix):]
	macHex, rest = rest[:macHexLen], rest[macHexLen:]
	if !bytes.HasPrefix(rest, []byte(sealMiddle)) {
		return nil, nil, false
	}
	record = rest[len(sealMiddle) : len(rest)-len(sealSuffix)]
	return macHex, record, true
}

// RecordOf returns the record of a stored value, sealed or written by an
// earlier version, unverified: for readers without the key. A session's
// record is not JSON but framed: statestore.RecordJSON gives its JSON.
func RecordOf(value []byte) []byte {
	if _, r, ok := Unseal(value); ok {
		return r
	}
	return value
}
