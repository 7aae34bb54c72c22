package lineage

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Typed: a value the user typed as it is — a command, a URL, a path —
// rather than one whose words the user happens to have used. Each text
// the user writes gives its spans: the whole text, each line, each
// `code` or ```code block```, each "quoted" or 'quoted' string; and a
// value is Typed when it is one of them (white space runs as one space,
// case kept: `rm -rf Build` is not `rm -rf build`) or a single token that
// matters which the user wrote. Words short enough to escape the token
// index (`rm`, `-rf`, `~`, `/`) are part of a span, so a command with
// anything added is not Typed.
const (
	// MaxTyped is the number of distinct spans kept; a span not kept
	// does not make a value Typed (fail closed).
	MaxTyped = 1024
	// maxTypedRunes bounds a span kept.
	maxTypedRunes = 2048
)

// typedHash is the hash of a span or value as Typed compares them.
// It is hashOf("\x00typed " + strings.Join(strings.Fields(s), " ")),
// false for no words or more than maxTypedRunes runes, hashed word by word
// without joining them (TestTypedHash).
func typedHash(s string) (uint64, bool) {
	h := fnvAdd(fnvOffset, "\x00typed ")
	words, runes := 0, 0
	for w := range strings.FieldsSeq(s) {
		if words > 0 {
			h = fnvAdd(h, " ")
			runes++
		}
		h = fnvAdd(h, w)
		runes += utf8.RuneCountInString(w)
		words++
	}
	if words == 0 || runes > maxTypedRunes {
		return 0, false
	}
	return h, true
}

// typedSpans returns the hashes of the spans of a text the user wrote,
// sorted and distinct.
func typedSpans(text string) []uint64 {
	var hs []uint64
	add := func(s string) {
		if h, ok := typedHash(s); ok {
			hs = append(hs, h)
		}
	}
	add(text)
	for line := range strings.Lines(text) {
		add(line)
	}
	for _, q := range []string{"```", "`", `"`, "'"} {
		rest := text
		for {
			_, after, ok := strings.Cut(rest, q)
			if !ok {
				break
			}
			span, tail, ok := strings.Cut(after, q)
			if !ok {
				break
			}
			if q == "```" {
				// A fenced block's first line may name its language.
				if lang, body, ok := strings.Cut(span, "\n"); ok && !strings.ContainsFunc(lang, unicode.IsSpace) {
					add(body)
				}
			}
			add(span)
			rest = tail
		}
	}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// typedText reports whether s is a span the user wrote, or one token
// that matters which the user wrote.
func (ix *Index) typedText(s string) bool {
	if h, ok := typedHash(s); ok && ix.isTyped(h) {
		return true
	}
	t := normalExact(strings.TrimFunc(s, func(r rune) bool { return !tokenRune(r) }))
	if strings.ContainsFunc(t, func(r rune) bool { return !tokenRune(r) }) {
		return false // more than one token
	}
	if strings.TrimFunc(t, connector) != t {
		// "/notes/a.md" or "~/notes/a.md" is not the user's "notes/a.md",
		// though the token index, which trims those, takes them as one.
		return false
	}
	return matters(t) && len(t) <= maxToken && ix.isTrusted(hashOf(t))
}
