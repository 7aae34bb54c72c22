package turnstate

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
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
	var sum [sha256.Size]byte
	m := s.mac(kind, key, record, sum[:0])
	out := make([]byte, 0, sealLen+len(record))
	out = append(out, sealPrefix...)
	out = hex.AppendEncode(out, m)
	out = append(out, sealMiddle...)
	out = append(out, record...)
	return append(out, sealSuffix...)
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

// LoadOrCreateKey reads the state key at path or, when the file does not
// exist, creates it with StateKeySize random bytes (mode 0600). It reports
// whether it created the key. The file is created complete or not at all
// (written aside, then linked into place), so processors starting together
// on one shared file agree on the key: the one that loses the race reads
// the winner's.
func LoadOrCreateKey(path string) ([]byte, bool, error) {
	key, err := os.ReadFile(path)
	created := false
	if errors.Is(err, os.ErrNotExist) {
		if created, err = createKey(path); err != nil {
			return nil, false, err
		}
		// Ours or a concurrent creator's: whichever is in place.
		key, err = os.ReadFile(path)
	}
	return key, created, checkKeyFile(path, key, err)
}

func checkKeyFile(path string, key []byte, err error) error {
	if err != nil {
		return fmt.Errorf("state key: %w", err)
	}
	if len(key) < StateKeySize {
		return fmt.Errorf("state key %s: %d bytes, need at least %d (create one with: head -c %d /dev/urandom > %s)", path, len(key), StateKeySize, StateKeySize, path)
	}
	return nil
}

// createKey writes a new key at path unless a file appears there first; it
// reports whether its key is the one in place.
func createKey(path string) (bool, error) {
	key := make([]byte, StateKeySize)
	if _, err := rand.Read(key); err != nil {
		return false, fmt.Errorf("state key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("state key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".state-key-*")
	if err != nil {
		return false, fmt.Errorf("state key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return false, fmt.Errorf("state key: %w", err)
	}
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return false, fmt.Errorf("state key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("state key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("state key: %w", err)
	}
	// Link, unlike rename, fails when path exists: a concurrent creator's
	// key is kept, never replaced.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("state key: %w", err)
	}
	return true, nil
}
