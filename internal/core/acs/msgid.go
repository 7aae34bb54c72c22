package acs

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// msgIDDigestLen is the length of the hex SHA-256 that ends a Nats-Msg-Id of
// pkg/client's form, <session_id>:<request_id>:<digest>.
const msgIDDigestLen = 2 * sha256.Size

// MsgIDDigestMismatch reports whether msgID ends in a digest of the form
// pkg/client publishes with (":" and 64 lower-case hex digits) that is not
// the SHA-256 of data.
//
// The stream takes a second message with the same Nats-Msg-Id for a retry
// of the first, drops it and acknowledges it with the first one's
// sequence. The digest makes only the very same bytes a retry; refusing a
// message whose digest is not its own stops someone who can publish to the
// tenant's hooks and knows an envelope's bytes before it is sent from
// storing other bytes under its id first, so that the envelope's sender
// would be handed the decision on those. Other Nats-Msg-Id forms are the
// publisher's own business and are not checked.
func MsgIDDigestMismatch(msgID string, data []byte) bool {
	i := strings.LastIndexByte(msgID, ':')
	if i < 0 || len(msgID)-i-1 != msgIDDigestLen {
		return false
	}
	digest := msgID[i+1:]
	for j := 0; j < len(digest); j++ {
		if c := digest[j]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) != digest
}
