package msghdr_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/turnguard/turnguard/internal/msghdr"
)

func TestValue(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "bad params", "bad params"},
		{"line breaks", "a\r\nb\nc", "a  b c"},
		{"at the limit", strings.Repeat("x", msghdr.MaxValue), strings.Repeat("x", msghdr.MaxValue)},
		{"over the limit", strings.Repeat("x", msghdr.MaxValue+5), strings.Repeat("x", msghdr.MaxValue) + "…"},
		{"cut inside a rune", strings.Repeat("x", msghdr.MaxValue-1) + "é", strings.Repeat("x", msghdr.MaxValue-1) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := msghdr.Value(tc.in)
			if got != tc.want || !utf8.ValidString(got) {
				t.Fatalf("Value(%.40q…) = %.40q…, want %.40q…", tc.in, got, tc.want)
			}
		})
	}
}

func TestSize(t *testing.T) {
	h := nats.Header{}
	if got := msghdr.Size(h); got != len("NATS/1.0\r\n\r\n") {
		t.Fatalf("empty: %d", got)
	}
	h.Set("Acs-Error-Code", "-32602")
	// "Acs-Error-Code: -32602\r\n"
	if got, want := msghdr.Size(h), len("NATS/1.0\r\n\r\n")+len("Acs-Error-Code: -32602\r\n"); got != want {
		t.Fatalf("one header: %d, want %d", got, want)
	}
}
