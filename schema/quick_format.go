package schema

import (
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The format and pattern keywords: allocation-free recognisers for the
// common valid shapes of the ACS schemas' uuid and date-time formats and
// their three patterns. A string a recogniser does not accept goes to the
// library's checker or compiled pattern, which has the final word.

// quickFormat checks a format. The library's uuid and date-time checkers
// split the string into fresh slices; the common valid shapes are
// recognised here without allocating, and everything else goes to the
// library's checker, which has the final word.
func quickFormat(f *jsonschema.Format, v any) bool {
	if str, ok := v.(string); ok {
		switch f.Name {
		case "uuid":
			if IsUUID(str) {
				return true
			}
		case "date-time":
			if plainDateTime(str) {
				return true
			}
		}
	}
	return f.Validate(v) == nil
}

// IsUUID reports whether s has the 8-4-4-4-12 hex form the schemas' uuid
// format (and the library's checker) accepts.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// plainDateTime recognises yyyy-mm-ddThh:mm:ss[.fraction]Z with a real
// calendar date and no leap second: a subset of what RFC 3339 (and the
// library) accepts, and nearly every timestamp a client sends.
func plainDateTime(s string) bool {
	if len(s) < 20 || s[len(s)-1] != 'Z' {
		return false
	}
	num := func(i, n int) (int, bool) {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	if s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return false
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	d, ok3 := num(8, 2)
	h, ok4 := num(11, 2)
	mi, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[mo-1]
	if mo == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	if d > days {
		return false
	}
	rest := s[19 : len(s)-1]
	if rest == "" {
		return true
	}
	if rest[0] != '.' || len(rest) == 1 {
		return false
	}
	for _, c := range []byte(rest[1:]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainPatterns recognise, without the regexp engine, strings that the ACS
// schemas' patterns match; a string they do not recognise goes to the
// compiled pattern, which has the final word. (Go's '$' without the m flag
// is the end of the text, and '.' is any character but '\n'.)
var plainPatterns = map[string]func(string) bool{
	`^\d+\.\d+\.\d+$`: func(s string) bool {
		parts := 0
		for i := 0; i <= len(s); {
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == i {
				return false
			}
			parts++
			if j == len(s) {
				return parts == 3
			}
			if s[j] != '.' {
				return false
			}
			i = j + 1
		}
		return false
	},
	`^[0-9a-f]{64}$`: func(s string) bool {
		if len(s) != 64 {
			return false
		}
		for i := 0; i < len(s); i++ {
			if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	},
	`^(steps/|protocols/|agbom/|trace/|system/|handshake/|wrapped:).+`: func(s string) bool {
		for _, p := range []string{"steps/", "protocols/", "agbom/", "trace/", "system/", "handshake/", "wrapped:"} {
			if strings.HasPrefix(s, p) && len(s) > len(p) && s[len(p)] != '\n' {
				return true
			}
		}
		return false
	},
}

func quickPattern(re jsonschema.Regexp, s string) bool {
	if f := plainPatterns[re.String()]; f != nil && f(s) {
		return true
	}
	return re.MatchString(s)
}
