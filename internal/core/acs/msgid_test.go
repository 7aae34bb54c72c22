package acs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/turnguard/turnguard/internal/core/acs"
)

func TestMsgIDDigestMismatch(t *testing.T) {
	data := []byte(`{"jsonrpc":"2.0"}`)
	sum := sha256.Sum256(data)
	own := hex.EncodeToString(sum[:])
	other := sha256.Sum256([]byte("other bytes"))
	for _, tc := range []struct {
		name  string
		msgID string
		want  bool
	}{
		{"its own digest", "s1:r1:" + own, false},
		{"another envelope's digest", "s1:r1:" + hex.EncodeToString(other[:]), true},
		{"no digest (an earlier client)", "s1:r1", false},
		{"none at all", "", false},
		{"a publisher's own id", "my-retry-key-7", false},
		{"upper-case hex is not the client's form", "s1:r1:" + strings.ToUpper(hex.EncodeToString(other[:])), false},
		{"one digit short", "s1:r1:" + own[1:], false},
		{"the digest alone after a colon", ":" + hex.EncodeToString(other[:]), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := acs.MsgIDDigestMismatch(tc.msgID, data); got != tc.want {
				t.Fatalf("MsgIDDigestMismatch(%q) = %v, want %v", tc.msgID, got, tc.want)
			}
		})
	}
}

func FuzzMsgIDDigestMismatch(f *testing.F) {
	f.Add("s1:r1:0000000000000000000000000000000000000000000000000000000000000000", []byte("x"))
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, msgID string, data []byte) {
		sum := sha256.Sum256(data)
		if acs.MsgIDDigestMismatch(msgID+":"+hex.EncodeToString(sum[:]), data) {
			t.Fatal("an envelope's own digest is a mismatch")
		}
		_ = acs.MsgIDDigestMismatch(msgID, data)
	})
}
