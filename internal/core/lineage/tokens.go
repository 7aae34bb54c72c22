package lineage

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// A text is compared with others by its tokens, never scanned whole: each
// content a session sees is cut into tokens once, when it arrives, and an
// argument value is cut the same way when a call carries it. Two kinds:
//
//   - words: runs of letters and digits, at least minWord characters
//     ("bill", "december", "2023");
//   - tokens that matter: the values that name someone or something — an
//     account number, an e-mail address, a host, a URL, a path, a file
//     name, a date — at least minMatter characters with a digit, an '@',
//     a '/' or an inner '.'. A URL also gives its host (with and without
//     "www.") and its path; an e-mail address only itself (its domain is
//     shared by strangers).
//
// Case and runs of white space never decide (the text is lower-cased),
// and punctuation around a token is not part of it, so "US1330…," in a
// sentence and "us1330…" in an argument are one token.
const (
	minWord   = 3
	minMatter = 4
	// maxToken bounds a token: a longer run (a base64 blob, a minified
	// script) is cut into pieces of this size, so that no token costs more
	// than this to hash.
	maxToken = 256
)

// connector reports whether r joins the parts of a compound token: URLs,
// hosts, e-mail addresses, paths, file names, dates and numbers.
func connector(r rune) bool {
	switch r {
	case '@', '.', '/', ':', '-', '_', '+', '~', '%', '#', '?', '=', '&':
		return true
	}
	return false
}

func tokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || connector(r)
}

// structural splits a URL-like compound into its host, path segments and
// query parts.
func structural(r rune) bool {
	switch r {
	case '/', ':', '?', '#', '=', '&':
		return true
	}
	return false
}

// kind of a token.
type kind uint8

const (
	word kind = iota + 1
	matter
	// pair is two words that follow each other ("riverside view"): a
	// phrase is traced by its pairs, so a title made of common words
	// found apart is not taken for one copied whole.
	pair
)

// each calls fn with every token of s, in order, duplicates included, and
// with each pair of consecutive words. s must be lower-cased already (see
// normal).
//
// fn gets each token's hash (hashOf); a pair comes with its hash only (the
// hash of the two words joined by a space), its text empty.
func each(s string, fn func(tok string, h uint64, k kind)) {
	prev := ""
	emit := func(t string, k kind) {
		fn(t, hashOf(t), k)
		if k == word {
			if prev != "" {
				fn("", pairHash(prev, t), pair)
			}
			prev = t
		}
	}
	var g groups
	for len(s) > 0 {
		i := strings.IndexFunc(s, tokenRune)
		if i < 0 {
			break
		}
		if !g.apart(s[:i]) {
			g.flush(emit)
		}
		s = s[i:]
		j := strings.IndexFunc(s, func(r rune) bool { return !tokenRune(r) })
		if j < 0 {
			j = len(s)
		}
		compound(s[:j], emit)
		g.add(s[:j], emit)
		s = s[j:]
	}
	g.flush(emit)
}

// Grouped identifiers: an account, a card or a phone number is written
// in groups as often as whole ("GB33 BUKB 2020 1555 5555 55",
// "4111-1111-1111-1111", "GB33BUKB20201555555555"), and a model rewrites
// one into the other. A run of short letter-and-digit groups, apart by a
// space or a hyphen, is also the token of the groups joined, so each
// spelling finds the others.
const (
	maxGroup       = 8  // characters of one group
	minGroupedLen  = 8  // characters of the groups joined
	maxGroupedLen  = 64 // a longer run is cut
	minGroupDigits = 4  // digits in the run: a number, not a sentence
)

type groups struct {
	joined []byte
	n      int // groups in joined
	tail   int // len(joined) up to the end of its last group with a digit
	digits int
	// wrapped: the gap before the next compound holds a line break; the
	// run goes on to the next line only with a group holding a digit.
	wrapped bool
}

// apart reports whether gap, the text between two compounds, keeps them
// in one run: one to three characters of white space, a line break among
// them at most (a number wrapped at the end of a line).
func (g *groups) apart(gap string) bool {
	if g.n == 0 || gap == "" || len(gap) > 3 || strings.Count(gap, "\n") > 1 {
		return false
	}
	g.wrapped = strings.Contains(gap, "\n")
	return strings.TrimFunc(gap, unicode.IsSpace) == ""
}

// add takes the compound c (raw, lower-cased) into the run, or ends the
// run when c is not made of short groups.
func (g *groups) add(c string, emit func(string, kind)) {
	label := strings.HasSuffix(c, ":")
	c = strings.TrimFunc(c, connector)
	if c == "" || label || strings.ContainsFunc(c, func(r rune) bool { return connector(r) && r != '-' }) ||
		g.wrapped && !strings.ContainsFunc(c, unicode.IsDigit) {
		// Not a group: a label ("IBAN:"), a word opening the next line.
		g.flush(emit)
		return
	}
	for part := range strings.SplitSeq(c, "-") {
		n := utf8.RuneCountInString(part)
		if n == 0 || n > maxGroup || strings.ContainsFunc(part, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			g.flush(emit)
			return
		}
		if len(g.joined)+len(part) > maxGroupedLen {
			g.flush(emit)
		}
		d := 0
		for _, r := range part {
			if unicode.IsDigit(r) {
				d++
			}
		}
		if g.n == 0 {
			// A run starts with a group holding a digit: the words
			// before a number are not part of it.
			g.joined, g.n, g.digits = g.joined[:0], 0, 0
			if d == 0 {
				continue
			}
		}
		g.joined = append(g.joined, part...)
		g.n++
		g.digits += d
		if d > 0 {
			g.tail = len(g.joined)
		}
	}
}

// flush emits the run, without the groups after its last digit, and
// starts a new one.
func (g *groups) flush(emit func(string, kind)) {
	if g.n >= 2 && g.tail >= minGroupedLen && g.digits >= minGroupDigits {
		emit(string(g.joined[:g.tail]), matter)
	}
	g.joined, g.n, g.digits, g.tail, g.wrapped = g.joined[:0], 0, 0, 0, false
}

// pairHash is hashOf(a + " " + b), without building the string.
func pairHash(a, b string) uint64 {
	h := fnvAdd(fnvOffset, a)
	h = fnvAdd(h, " ")
	return fnvAdd(h, b)
}

// compound emits one run of token characters: itself when it matters, the
// parts of a URL, and its words.
func compound(c string, fn func(string, kind)) {
	c = strings.TrimFunc(c, connector)
	if c == "" {
		return
	}
	if len(c) > maxToken && strings.ContainsFunc(c, structural) {
		// A long URL (a redirect's, a tracker's) is read by its parts —
		// host, path segments, query values — before any is cut, so that
		// no cut falls inside the host it leads to; and by where it
		// leads (urlHead), so that the place is still one a page named.
		if h := urlHead(c); h != "" {
			fn(h, matter)
		}
		for part := range strings.FieldsFuncSeq(c, structural) {
			compound(part, fn)
		}
		return
	}
	for len(c) > maxToken {
		cut := maxToken
		for cut > 0 && !utf8.RuneStart(c[cut]) {
			cut--
		}
		compound(c[:cut], fn)
		c = c[cut:]
	}
	if !strings.ContainsFunc(c, connector) {
		emitWord(c, fn)
		return
	}
	if matters(c) {
		fn(c, matter)
	}
	if d, ok := percentDecoded(c); ok {
		// A link wrapped in another (a mail filter's safe link, a
		// redirect) or an address escaped in a mailto: is written
		// percent-encoded; a model unwraps it. Its decoded runs count
		// too.
		for part := range strings.FieldsFuncSeq(d, func(r rune) bool { return !tokenRune(r) }) {
			compound(part, fn)
		}
	}
	if !strings.Contains(c, "@") && strings.ContainsFunc(c, structural) {
		// A URL or path: its host and each segment stand on their own
		// ("https://www.evil.com/x" is also "www.evil.com", "evil.com").
		for part := range strings.FieldsFuncSeq(c, structural) {
			part = strings.TrimFunc(part, connector)
			if part == "" || part == c || !matters(part) {
				continue
			}
			fn(part, matter)
			if host, ok := strings.CutPrefix(part, "www."); ok && matters(host) {
				fn(host, matter)
			}
		}
	}
	for w := range strings.FieldsFuncSeq(c, connector) {
		emitWord(w, fn)
	}
}

// urlHead is the beginning of a long URL that says where it leads — its
// scheme and authority (https://evil.example:8443), or a host and the
// first segment of its path (evil.example/boot.sh) — when that names a
// place on the network (remoteHost); else "". Its parts alone do not:
// a host alone is a dotted word (remote.go).
func urlHead(c string) string {
	end := -1
	if i := strings.Index(c, "://"); i > 0 {
		end = i + 3
	} else if i := strings.IndexByte(c, '/'); i > 0 {
		end = i + 1
	}
	if end < 0 {
		return ""
	}
	if j := strings.IndexAny(c[end:], "/?#"); j >= 0 {
		end += j
	} else {
		end = len(c)
	}
	h := strings.TrimFunc(c[:end], connector)
	if len(h) > maxToken || h == c {
		return ""
	}
	if _, ok := remoteHost(h); !ok {
		return ""
	}
	return h
}

func emitWord(w string, fn func(string, kind)) {
	n := utf8.RuneCountInString(w)
	if n < minWord {
		return
	}
	fn(w, word)
	// An account number or a long number is a token that matters by
	// itself.
	if n >= minMatter && strings.ContainsFunc(w, unicode.IsDigit) {
		fn(w, matter)
	}
}

// matters reports whether a compound names something: long enough, and
// with a digit, an '@', a '/' or a '.' between two other characters.
func matters(c string) bool {
	if utf8.RuneCountInString(c) < minMatter {
		return false
	}
	if strings.ContainsFunc(c, unicode.IsDigit) || strings.ContainsAny(c, "@/") {
		return true
	}
	i := strings.IndexByte(c, '.')
	return i > 0 && i < len(c)-1
}

// percentDecoded is c with its %XX escapes decoded (lower-cased: c is),
// and whether it held any. An escape that is not two hex digits stays.
func percentDecoded(c string) (string, bool) {
	if !strings.Contains(c, "%") {
		return "", false
	}
	unhex := func(b byte) (byte, bool) {
		switch {
		case b >= '0' && b <= '9':
			return b - '0', true
		case b >= 'a' && b <= 'f':
			return b - 'a' + 10, true
		case b >= 'A' && b <= 'F':
			return b - 'A' + 10, true
		}
		return 0, false
	}
	var b strings.Builder
	decoded := false
	for i := 0; i < len(c); i++ {
		if c[i] == '%' && i+2 < len(c) {
			hi, ok1 := unhex(c[i+1])
			lo, ok2 := unhex(c[i+2])
			if ok1 && ok2 {
				b.WriteByte(hi<<4 | lo)
				i += 2
				decoded = true
				continue
			}
		}
		b.WriteByte(c[i])
	}
	if !decoded {
		return "", false
	}
	return strings.ToLower(b.String()), true
}

// normal is the form texts and values are tokenised in: lower case, and —
// for text that is not ASCII — compatibility forms folded (NFKC: a
// fullwidth "ＣＨ９３" is "ch93", a no-break space a space), the
// characters that show nothing dropped (format characters: zero-width
// spaces and joiners, soft hyphens; variation selectors) and letters of
// other scripts that look like Latin ones folded to those (lookalike.go:
// a Cyrillic "а" is "a"), and the decimal digits of every script written
// as ASCII digits (digits.go: an Arabic-Indic "٢٩" is "29"). A page can
// write an account with them between its characters, or an address with
// them for its letters; a model copying it leaves them out.
func normal(s string) string { return normalForm(s, true) }

// normalExact is normal without the look-alikes folded (digits are: a
// digit's value is the same number whoever wrote it): the form the
// user's words are kept in, so that a value is the user's only as the
// user wrote it — "аlice@example.com" with a Cyrillic "а", a page's
// look-alike of the user's address, is not the user's
// "alice@example.com".
func normalExact(s string) string { return normalForm(s, false) }

func normalForm(s string, fold bool) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Map(func(r rune) rune {
				if r < utf8.RuneSelf {
					return unicode.ToLower(r)
				}
				// Invisible: format characters, variation selectors and the
				// other default-ignorable code points (U+034F, the Hangul
				// fillers, U+17B4), which a page can put inside a name.
				if unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
					unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) {
					return -1
				}
				if d, ok := asciiDigit(r); ok {
					return d
				}
				if r == '\u3002' {
					// The ideographic full stop (and the halfwidth one, which
					// NFKC makes it) parts a host's labels as '.' does (UTS
					// #46): "münchen。example" is münchen.example.
					return '.'
				}
				r = unicode.ToLower(r)
				if l, ok := lookalike(r); ok && fold {
					return l
				}
				return r
			}, norm.NFKC.String(s))
		}
	}
	return strings.ToLower(s)
}

// exactOf is normalExact(s), given n, normal(s): the same for ASCII.
func exactOf(s, n string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return normalExact(s)
		}
	}
	return n
}

// foldLookalikes is s, in normalExact's form, in normal's.
func foldLookalikes(s string) string {
	return strings.Map(func(r rune) rune {
		if l, ok := lookalike(r); ok {
			return l
		}
		return r
	}, s)
}
