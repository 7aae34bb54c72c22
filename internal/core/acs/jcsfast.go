package acs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The fast canonical forms below write RFC 8785 directly from values the
// core already holds, instead of marshalling them and then letting jsontext
// re-parse and reorder the text (the profile had that at an eighth of a
// decision). They cover what envelopes and chain entries nearly always
// contain — ASCII member names, valid UTF-8 strings, short integers — and
// report ok=false for anything else, where the callers fall back to the
// jsontext canonicaliser, which stays the reference.

// appendCanonicalString appends s as an RFC 8785 string: only '"', '\\'
// and control characters escaped, the latter in their short form or as
// lowercase \u00xx. ok=false for invalid UTF-8.
func appendCanonicalString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	start := 0
	checked := false // the rest of s is known to be valid UTF-8
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			if c >= utf8.RuneSelf && !checked {
				if !utf8.ValidString(s[i:]) {
					return b, false
				}
				checked = true
			}
			continue
		}
		b = append(b, s[start:i]...)
		start = i + 1
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			const digits = "0123456789abcdef"
			b = append(b, '\\', 'u', '0', '0', digits[c>>4], digits[c&0xf])
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// asciiKey reports whether a member name sorts the same by bytes as by
// UTF-16 code units, as RFC 8785 sorts: true for ASCII.
func asciiKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// appendCanonicalNumber appends the RFC 8785 form of a JSON number. A plain
// integer of at most 15 digits (exactly representable, printed as itself by
// the ECMAScript algorithm) is copied; anything else goes through jsontext.
func appendCanonicalNumber(b []byte, n json.Number) ([]byte, bool) {
	s := string(n)
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	simple := len(digits) > 0 && len(digits) <= 15 && (digits[0] != '0' || len(digits) == 1) && s != "-0"
	for i := 0; simple && i < len(digits); i++ {
		simple = digits[i] >= '0' && digits[i] <= '9'
	}
	if simple {
		return append(b, s...), true
	}
	v := jsontext.Value(s)
	if v.Canonicalize() != nil || v.Kind() != '0' {
		return b, false
	}
	return append(b, v...), true
}

type member struct {
	name  string
	value any
}

// appendCanonicalValue appends the RFC 8785 form of a generic decoded JSON
// value (map[string]any, []any, string, json.Number, bool, nil).
func appendCanonicalValue(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case map[string]any:
		// Objects of up to 16 members sort their members on the stack.
		var small [16]member
		members, ok := sortedMembers(v, small[:0])
		if !ok {
			return b, false
		}
		b = append(b, '{')
		for i, m := range members {
			if b, ok = appendMemberName(b, i == 0, m.name); !ok {
				return b, false
			}
			if b, ok = appendCanonicalValue(b, m.value); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendCanonicalValue(b, x); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case string:
		return appendCanonicalString(b, v)
	case json.Number:
		return appendCanonicalNumber(b, v)
	case bool:
		return strconv.AppendBool(b, v), true
	case nil:
		return append(b, "null"...), true
	}
	return b, false
}

// sortedMembers appends m's members to members in RFC 8785 order. ok=false
// for a non-ASCII name: RFC 8785 sorts by UTF-16 code units, which byte
// order matches only for ASCII.
func sortedMembers(m map[string]any, members []member) ([]member, bool) {
	for k, x := range m {
		if !asciiKey(k) {
			return members, false
		}
		members = append(members, member{k, x})
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.name, b.name) })
	return members, true
}

// appendMemberName appends a member's name and its colon, after a comma
// unless it is the first.
func appendMemberName(b []byte, first bool, name string) ([]byte, bool) {
	if !first {
		b = append(b, ',')
	}
	b, ok := appendCanonicalString(b, name)
	return append(b, ':'), ok
}

// RequestHashOf is RequestHash of a request's params given also in decoded
// form (as decoded from raw, numbers as json.Number, no duplicate names):
// the canonical form is written from the decoded value, skipping a second
// parse of raw; raw is canonicalised only where that cannot be done.
func RequestHashOf(params any, raw json.RawMessage) (string, error) {
	var buf [4096]byte
	if c, ok := appendCanonicalValue(buf[:0], params); ok {
		sum := sha256.Sum256(c)
		return hex.EncodeToString(sum[:]), nil
	}
	return RequestHash(raw)
}

// appendCanonicalEntry appends the RFC 8785 form of e, members in sorted
// order and empty optional ones omitted as encoding/json omits them.
func appendCanonicalEntry(b []byte, e *ContextEntry) ([]byte, bool) {
	ok := true
	member := func(first bool, name, val string) {
		if !first {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		var vok bool
		b, vok = appendCanonicalString(b, val)
		ok = ok && vok
	}
	b = append(b, '{')
	member(true, "entry_id", e.EntryID)
	if p := e.ProvenanceSummary; p != nil {
		b = append(b, `,"provenance_summary":{`...)
		first := true
		if p.EntryCount != nil {
			b = append(b, `"entry_count":`...)
			b = appendCanonicalInt(b, *p.EntryCount, &ok)
			first = false
		}
		if len(p.EntryCountByOrigin) > 0 {
			if !first {
				b = append(b, ',')
			}
			b = append(b, `"entry_count_by_origin":{`...)
			keys := make([]string, 0, len(p.EntryCountByOrigin))
			for k := range p.EntryCountByOrigin {
				ok = ok && asciiKey(k)
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for i, k := range keys {
				if i > 0 {
					b = append(b, ',')
				}
				var kok bool
				b, kok = appendCanonicalString(b, k)
				ok = ok && kok
				b = append(b, ':')
				b = appendCanonicalInt(b, p.EntryCountByOrigin[k], &ok)
			}
			b = append(b, '}')
			first = false
		}
		if len(p.OriginsSeen) > 0 {
			if !first {
				b = append(b, ',')
			}
			b = append(b, `"origins_seen":[`...)
			for i, o := range p.OriginsSeen {
				if i > 0 {
					b = append(b, ',')
				}
				var sok bool
				b, sok = appendCanonicalString(b, o)
				ok = ok && sok
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if e.RequestHash != "" {
		member(false, "request_hash", e.RequestHash)
	}
	member(false, "step_id", e.StepID)
	member(false, "step_type", e.StepType)
	if e.Timestamp != "" {
		member(false, "timestamp", e.Timestamp)
	}
	if e.TurnID != "" {
		member(false, "turn_id", e.TurnID)
	}
	return append(b, '}'), ok
}

// appendCanonicalInt appends an int that ECMAScript prints as its decimal
// digits (magnitude below 2^53); larger ones clear ok.
func appendCanonicalInt(b []byte, n int, ok *bool) []byte {
	const maxExact = 1<<53 - 1
	if n > maxExact || n < -maxExact {
		*ok = false
	}
	return strconv.AppendInt(b, int64(n), 10)
}
