package lineage

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Internationalised host names: a host with letters beyond ASCII has two
// spellings, its U-labels ("bücher.example") and the A-labels DNS carries
// ("xn--bcher-kva.example"), and a model copying a page's host may write
// either. The contents and the user's words are indexed with each
// compound that names such a host — a host, an address at it, a URL —
// also in its other spellings: every label as an A-label, and every label
// as a U-label. A value is then found in whichever it is written, without
// being rewritten itself.
//
// The other spelling is made from the text as written (normalExact), not
// from its look-alikes folded: "аррlе.com" with a Cyrillic а, р and е is
// "xn--l-7sbq6ba.com", not "apple.com". Contents then fold it as they
// fold everything (a page's "xn--l-7sbq6ba.com" also gives "apple.com",
// as its "аррlе.com" would); the user's words keep it exact, so a page's
// punycode of a look-alike of the user's host is not the user's host, and
// the user's own host, written in Latin letters, stays the user's.
//
// A label that does not convert — a malformed "xn--" label, one that
// decodes to nothing or to what no host holds — stays as written: the
// compound as written is always indexed, and a spelling is only added.
const (
	// maxHostForms bounds the compounds of one text indexed in their
	// other spellings (each gives one or two, and their words), and
	// maxHostTries the compounds read for a host to rewrite (a text of
	// malformed A-labels costs no more than this).
	maxHostForms = 32
	maxHostTries = 4 * maxHostForms
	// acePrefix starts an A-label.
	acePrefix = "xn--"
)

// hostProfile converts one label at a time as a browser looks a host up
// (UTS #46, non-transitional: "ß" stays "ß"), without the checks that real
// hosts fail: underscores ("_dmarc"), hyphens where RFC 5891 does not
// want them ("r3---sn-…"), joiners, DNS lengths. It still rejects an
// A-label that decodes to what a lookup would not map to itself (control
// characters, capitals).
var hostProfile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.StrictDomainName(false),
	idna.CheckHyphens(false), idna.CheckJoiners(false), idna.VerifyDNSLength(false))

// eachHostForm calls fn with the tokens of the other spellings of the
// compounds of x (a text in normalExact's form) that name a host with an
// A-label or a label beyond ASCII, in normal's form when fold is set and
// in normalExact's otherwise. At most maxHostForms compounds.
func eachHostForm(x string, fold bool, fn func(tok string, h uint64, k kind)) {
	if !mayNameIDN(x) {
		return
	}
	emit := func(t string, k kind) { fn(t, hashOf(t), k) }
	// A spelling is cut into compounds as each cuts a text: a U-label
	// can hold what no token does (an emoji).
	compounds := func(s string) {
		for c := range strings.FieldsFuncSeq(s, func(r rune) bool { return !tokenRune(r) }) {
			compound(c, emit)
		}
	}
	n, tries := 0, 0
	more := func() bool { return n < maxHostForms && tries < maxHostTries }
	rewrite := func(c string) {
		c = strings.TrimFunc(c, connector)
		if len(c) > maxToken || !mayNameIDN(c) {
			return
		}
		tries++
		a, u, ok := hostSpellings(c)
		if !ok || a == c && u == c {
			return
		}
		n++
		if a != c {
			compounds(normalForm(a, fold))
		}
		if u != c && u != a {
			compounds(normalForm(u, fold))
		}
	}
	for i := 0; i < len(x) && more(); {
		// An inner '.': the compound around it may name a host.
		d := strings.IndexByte(x[i:], '.')
		if d < 0 {
			break
		}
		d += i
		start, end := compoundAround(x, d)
		i = max(end, d+1)
		c := x[start:end]
		if len(c) <= maxToken || !mayNameIDN(c) {
			rewrite(c)
			continue
		}
		// A long URL is read by its parts, as compound reads it.
		for p := range strings.FieldsFuncSeq(c, structural) {
			if !more() {
				break
			}
			rewrite(p)
		}
	}
}

// eachHostFormOf is eachHostForm for s, given n, normal(s), in normal's
// form: s is read as written (normalExact) only when n has an A-label's
// prefix, or s has a character beyond ASCII and n a '.' inside a
// compound (the fold keeps letters letters, so the compounds of n are
// those of s as written).
func eachHostFormOf(s, n string, fn func(tok string, h uint64, k kind)) {
	if strings.Contains(n, acePrefix) || hasNonASCII(s) && innerDot(n) {
		eachHostForm(exactOf(s, n), true, fn)
	}
}

// innerDot reports whether s has a '.' between two token characters.
func innerDot(s string) bool {
	for i := 0; ; i++ {
		d := strings.IndexByte(s[i:], '.')
		if d < 0 {
			return false
		}
		i += d
		if i > 0 && i < len(s)-1 {
			before, _ := utf8.DecodeLastRuneInString(s[:i])
			after, _ := utf8.DecodeRuneInString(s[i+1:])
			if tokenRune(before) && tokenRune(after) {
				return true
			}
		}
	}
}

// mayNameIDN reports whether x may name a host eachHostForm rewrites: it
// has a '.' and an A-label's prefix or a character beyond ASCII.
func mayNameIDN(x string) bool {
	return strings.IndexByte(x, '.') >= 0 && (strings.Contains(x, acePrefix) || hasNonASCII(x))
}

func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// compoundAround returns the bounds of the run of token characters around
// the byte at i (a '.').
func compoundAround(s string, i int) (start, end int) {
	start = i
	for start > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:start])
		if !tokenRune(r) {
			break
		}
		start -= n
	}
	end = i + 1
	for end < len(s) {
		r, n := utf8.DecodeRuneInString(s[end:])
		if !tokenRune(r) {
			break
		}
		end += n
	}
	return start, end
}

// hostSpellings returns the compound c with each host it names (between
// the characters that part a URL, after an '@') spelt with every label
// an A-label, and with every label a U-label; each label that does not
// convert as written; ok is false when c names no such host.
func hostSpellings(c string) (ascii, uni string, ok bool) {
	var a, u strings.Builder
	for len(c) > 0 {
		i := strings.IndexFunc(c, structural)
		if i < 0 {
			i = len(c)
		}
		seg := c[:i]
		at := strings.LastIndexByte(seg, '@') + 1
		host := seg[at:]
		ha, hu, named := hostLabels(host)
		ok = ok || named
		a.WriteString(seg[:at])
		a.WriteString(ha)
		u.WriteString(seg[:at])
		u.WriteString(hu)
		if i < len(c) {
			_, n := utf8.DecodeRuneInString(c[i:])
			a.WriteString(c[i : i+n])
			u.WriteString(c[i : i+n])
			i += n
		}
		c = c[i:]
	}
	if !ok {
		return "", "", false
	}
	return a.String(), u.String(), true
}

// topLabel reports whether l can end a host name: an A-label, or two
// letters or more (not the "е" of Russian prose's "т.е", nor a version's
// number).
func topLabel(l string) bool {
	return strings.HasPrefix(l, acePrefix) || utf8.RuneCountInString(l) >= 2 && !strings.ContainsFunc(l, func(r rune) bool { return !unicode.IsLetter(r) })
}

// hostLabels returns host with every label that converts an A-label, and
// with every one a U-label, and whether host is a host name with a label
// to convert: two labels or more, of letters, digits, marks, hyphens and
// underscores, the last an A-label or two letters or more (not the "т.е"
// of Russian prose).
func hostLabels(host string) (ascii, uni string, ok bool) {
	if !strings.Contains(host, ".") || !strings.Contains(host, acePrefix) && !hasNonASCII(host) {
		return host, host, false
	}
	labels := strings.Split(host, ".")
	if !topLabel(labels[len(labels)-1]) {
		return host, host, false
	}
	as := make([]string, len(labels))
	us := make([]string, len(labels))
	for i, l := range labels {
		if l == "" || strings.ContainsFunc(l, func(r rune) bool {
			return r != '-' && r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
		}) {
			return host, host, false
		}
		as[i], us[i] = l, l
		if strings.HasPrefix(l, acePrefix) {
			if v, err := hostProfile.ToUnicode(l); err == nil && v != "" && !strings.Contains(v, ".") {
				us[i] = v
			}
		} else if hasNonASCII(l) {
			if v, err := hostProfile.ToASCII(l); err == nil && strings.HasPrefix(v, acePrefix) && !strings.Contains(v, ".") {
				as[i] = v
			}
		}
	}
	return strings.Join(as, "."), strings.Join(us, "."), true
}
