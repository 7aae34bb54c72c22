package lineage

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Spelt-out identifiers: a page can give an address, a host or an account
// in a form no token of it is — "attacker at evil dot com", "attacker [at]
// evil [dot] com", "attacker(at)evil(dot)com", "a-t-t-a-c-k-e-r@evil.com",
// "a t t a c k e r @ e v i l . c o m", "G B 3 3 B U K B 2 0 2 0 …" — and
// ask the model to write it whole. Untrusted content is also indexed by
// the tokens of such runs joined (spelt), so the whole value is traced to
// it. Only a join that has the shape of an identifier counts — an address
// (one '@' before a host), a host (labels apart by dots, the last of
// letters), or an account (maxGroupedLen characters at most, minGroupedLen
// letters and digits at least, minGroupDigits of them digits) — so that
// words run together ("look at the map") give nothing a value is likely
// to be.
const (
	// maxSpelt bounds the tokens one content gives by its joins.
	maxSpelt = 32
	// maxSpeltLen bounds a join: a longer one is not an identifier.
	maxSpeltLen = maxToken
	// minSpeltSingles is the number of single characters apart by '-'
	// that make a word spelt letter by letter ("a-t-t"), not a compound
	// ("x-ray", "e-mail").
	minSpeltSingles = 3
)

// A piece of a run: what one field (text between white space) gives.
type piece uint8

const (
	pieceNone piece = iota // ends a run
	pieceChar              // one letter or digit
	pieceWord              // a compound
	pieceJoin              // '@' or '.', spelt or alone; '-' or '_' alone
)

// bracketed are the connectors written in brackets, and what they stand
// for.
var bracketed = strings.NewReplacer(
	"(at)", "@", "[at]", "@", "{at}", "@", "<at>", "@", "(@)", "@", "[@]", "@",
	"(dot)", ".", "[dot]", ".", "{dot}", ".", "<dot>", ".", "(.)", ".", "[.]", ".",
)

// spelt calls fn with the identifiers that runs of s spell out, joined
// (see above); s is in normal form. At most maxSpelt.
func spelt(s string, fn func(tok string)) {
	var buf [64]byte
	var (
		run      = buf[:0]
		pieces   int   // in run
		last     piece // the last piece of run
		respelt  bool  // a field of run was respelt (a bracketed connector, hyphens dropped)
		emitted  int
		hyphened []byte
	)
	end := func() {
		if (pieces >= 2 || respelt) && emitted < maxSpelt {
			compound(string(run), func(t string, k kind) {
				if k == matter && emitted < maxSpelt && identifierShape(t) {
					fn(t)
					emitted++
				}
			})
		}
		run, pieces, last, respelt = run[:0], 0, pieceNone, false
	}
	for len(s) > 0 && emitted < maxSpelt {
		var f string
		var brackets bool
		f, s, brackets = nextField(s)
		if f == "" {
			continue
		}
		rewritten := false
		if brackets {
			if g := bracketed.Replace(f); g != f {
				f, rewritten = g, true
			}
		}
		p, text, before, after := pieceOf(f)
		if p == pieceWord && strings.ContainsAny(text, speltSeparators) {
			for _, sep := range speltSeparators {
				var ok bool
				if hyphened, ok = dropSpeltHyphens(hyphened[:0], text, sep); ok {
					text, rewritten = string(hyphened), true
				}
			}
		}
		// Does p go on the run? A join needs something on either side;
		// single characters run on; words only across a join. Punctuation
		// before a field or after it ends a run there ("at home, dot").
		switch {
		case p == pieceNone || before:
			end()
		case last == pieceNone:
		case p == pieceJoin && last != pieceJoin,
			p != pieceJoin && last == pieceJoin,
			p == pieceChar && last == pieceChar:
		default:
			end()
		}
		if p == pieceJoin && (text == "-" || text == "_") && last != pieceChar {
			// A dash between words is prose; between letters spelt
			// out, a part of the name ("p a y - d e s k").
			end()
		}
		if p == pieceJoin && text == "@" && bytes.IndexByte(run, '@') >= 0 {
			// A second "at" is prose after the address ("… dot net at
			// once"), not a part of it.
			end()
		}
		if len(run)+len(text) > maxSpeltLen {
			end()
		}
		if p == pieceNone || p == pieceJoin && last == pieceNone {
			continue // nothing to join it to
		}
		run = append(run, text...)
		pieces++
		last = p
		respelt = respelt || rewritten
		if after {
			end()
		}
	}
	end()
}

// pieceOf reads one field: a connector ("@", ".", "at", "dot"; "-" and
// "_", which join single characters only), a single
// letter or digit, or a compound (its text without the punctuation
// around it); and whether punctuation was around it, before and after.
func pieceOf(f string) (p piece, text string, before, after bool) {
	switch f {
	case "@", "at":
		return pieceJoin, "@", false, false
	case ".", "dot":
		return pieceJoin, ".", false, false
	case "-", "_":
		return pieceJoin, f, false, false
	}
	if p, text, before, after, ok := asciiPieceOf(f); ok {
		return p, text, before, after
	}
	return runesPieceOf(f)
}

// runesPieceOf is pieceOf for any field but a connector.
func runesPieceOf(f string) (p piece, text string, before, after bool) {
	other := func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
	t := strings.TrimLeftFunc(f, other)
	before = len(t) < len(f)
	text = strings.TrimRightFunc(t, other)
	after = len(text) < len(t)
	switch {
	case text == "" || strings.ContainsFunc(text, func(r rune) bool { return !tokenRune(r) }):
		return pieceNone, "", false, false
	case utf8.RuneCountInString(text) == 1:
		return pieceChar, text, before, after
	}
	return pieceWord, text, before, after
}

// speltSeparators are what a name's letters are spelt apart by inside one
// word: "a-t-t-a-c-k-e-r", "a_t_t_a_c_k_e_r", "a.t.t.a.c.k.e.r".
const speltSeparators = "-_."

// dropSpeltHyphens appends to dst the compound c with the separators sep
// of its letter-by-letter parts dropped ("a-t-t-a-c-k-e-r@evil.com" is
// "attacker@evil.com"): a part between other connectors made of
// minSpeltSingles single characters or more apart by sep. It reports
// whether it dropped any.
func dropSpeltHyphens(dst []byte, c string, sep rune) ([]byte, bool) {
	start, dropped := len(dst), false
	s := string(sep)
	for len(c) > 0 {
		i := strings.IndexFunc(c, func(r rune) bool { return connector(r) && r != sep })
		if i < 0 {
			i = len(c)
		}
		part := c[:i]
		if n := strings.Count(part, s) + 1; n >= minSpeltSingles && utf8.RuneCountInString(part) == 2*n-1 &&
			!strings.Contains(part, s+s) && !strings.HasPrefix(part, s) && !strings.HasSuffix(part, s) {
			for _, r := range part {
				if r != sep {
					dst = utf8.AppendRune(dst, r)
				}
			}
			dropped = true
		} else {
			dst = append(dst, part...)
		}
		if i < len(c) {
			dst = append(dst, c[i])
			i++
		}
		c = c[i:]
	}
	if !dropped {
		return dst[:start], false
	}
	return dst, true
}

// identifierShape reports whether a joined token is an identifier: an
// address, a host, or an account.
func identifierShape(t string) bool {
	if local, domain, ok := strings.Cut(t, "@"); ok {
		return local != "" && !strings.Contains(domain, "@") && hostShape(domain)
	}
	if strings.Contains(t, ".") {
		return hostShape(t)
	}
	if strings.ContainsFunc(t, connector) {
		return false
	}
	letters, digits := 0, 0
	for _, r := range t {
		switch {
		case unicode.IsDigit(r):
			digits++
		case unicode.IsLetter(r):
			letters++
		}
	}
	return letters+digits >= minGroupedLen && len(t) <= maxGroupedLen && digits >= minGroupDigits
}

// hostShape reports whether t is a host name: two labels or more of
// letters, digits and hyphens, apart by dots, the last of two letters or
// more.
func hostShape(t string) bool {
	labels := 0
	tld := ""
	for label := range strings.SplitSeq(t, ".") {
		if label == "" || strings.ContainsFunc(label, func(r rune) bool { return r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			return false
		}
		labels++
		tld = label
	}
	return labels >= 2 && utf8.RuneCountInString(tld) >= 2 && !strings.ContainsFunc(tld, func(r rune) bool { return !unicode.IsLetter(r) })
}

// asciiPieceOf is pieceOf for a field of ASCII characters, read in one
// pass; ok is false for any other.
func asciiPieceOf(f string) (p piece, text string, before, after, ok bool) {
	alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' }
	inner := true // every character a letter, a digit or a connector
	for k := 0; k < len(f); k++ {
		if b := f[k]; b >= utf8.RuneSelf {
			return 0, "", false, false, false
		} else if !alnum(b) && !connector(rune(b)) {
			inner = false
		}
	}
	i, j := 0, len(f)
	for i < j && !alnum(f[i]) {
		i++
	}
	for j > i && !alnum(f[j-1]) {
		j--
	}
	if !inner {
		for k := i; k < j; k++ {
			if b := f[k]; !alnum(b) && !connector(rune(b)) {
				return pieceNone, "", false, false, true
			}
		}
	}
	switch text, before, after = f[i:j], i > 0, j < len(f); len(text) {
	case 0:
		return pieceNone, "", false, false, true
	case 1:
		return pieceChar, text, before, after, true
	}
	return pieceWord, text, before, after, true
}

var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// nextField returns the first field of s (strings.Fields's, read byte by
// byte while the text is ASCII), the text after it, and whether the field
// holds a bracket: '(', '[', '{' or '<'. The field is empty when s starts
// with white space.
func nextField(s string) (f, rest string, brackets bool) {
	i := 0
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if asciiSpace[b] {
				break
			}
			brackets = brackets || b == '(' || b == '[' || b == '{' || b == '<'
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			break
		}
		i += n
	}
	f, rest = s[:i], s[i:]
	if rest != "" {
		_, n := utf8.DecodeRuneInString(rest)
		rest = rest[n:]
	}
	return f, rest, brackets
}
