// Package msghdr shapes NATS message headers the processor and the HTTP
// endpoint build from untrusted text (error messages, request ids): one
// line, bounded, and how much room the headers take of a message.
package msghdr

import (
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
)

// MaxValue bounds a header value built from text.
const MaxValue = 2048

// Value makes text safe for a header value: line breaks, which would end
// the header, become spaces, and text beyond MaxValue is cut on a rune
// boundary (so it stays valid UTF-8) and marked with an ellipsis.
func Value(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
	if len(s) > MaxValue {
		cut := MaxValue
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Size is how many bytes h takes on the wire, for checking a message
// against the server's max_payload before publishing it.
func Size(h nats.Header) int {
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}
