package acs_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/turnguard/turnguard/internal/core/acs"
)

func TestStoredLen(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"0b1c6a9e-2f4d-4c1a-9d3e-5f6a7b8c9d0e", 36},
		{`a"b\c`, 7},
		{"<>&", 18},
		{"\n\t\x01", 2 + 2 + 6},
		{"é€😀", 2 + 3 + 4},
		{"\u2028\u2029", 12},
		{"\xff", 6},
	} {
		if got := acs.StoredLen(tc.s); got != tc.want {
			t.Errorf("StoredLen(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

func TestTruncateStored(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"ab<", 7, "ab"},
		{"ab<", 8, "ab<"},
		{"a€", 3, "a"},
		{strings.Repeat("x", 1000), 256, strings.Repeat("x", 256)},
	} {
		if got := acs.TruncateStored(tc.s, tc.max); got != tc.want {
			t.Errorf("TruncateStored(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
	}
}

// FuzzStoredLen: StoredLen is what encoding/json (the state's encoding)
// writes, and TruncateStored cuts the longest prefix at a character
// boundary that fits.
func FuzzStoredLen(f *testing.F) {
	for _, s := range []string{"", "turn-1", `<"\>`, "\u2028é", "\xff\xfe", "\x00\x1f"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if n := acs.StoredLen(s); n != len(b)-2 {
			t.Fatalf("StoredLen(%q) = %d, encoding/json writes %d", s, n, len(b)-2)
		}
		max = max % 300
		if max < 0 {
			max = -max
		}
		p := acs.TruncateStored(s, max)
		if !strings.HasPrefix(s, p) || acs.StoredLen(p) > max {
			t.Fatalf("TruncateStored(%q, %d) = %q", s, max, p)
		}
		if rest := s[len(p):]; rest != "" {
			_, size := utf8.DecodeRuneInString(rest)
			if acs.StoredLen(s[:len(p)+size]) <= max {
				t.Fatalf("TruncateStored(%q, %d) = %q stops short", s, max, p)
			}
		}
		if v := acs.CheckStored("/x", s, max); (v != nil) != (acs.StoredLen(s) > max) {
			t.Fatalf("CheckStored(%q, %d) = %v", s, max, v)
		}
	})
}
