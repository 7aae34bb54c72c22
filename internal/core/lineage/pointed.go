package lineage

import (
	"slices"
	"strings"
	"unicode"
)

// MaxPointed calls whose every argument the user typed are remembered
// until their results arrive (Point); an older one's output is then
// content like any other (fail closed).
const MaxPointed = 8

// Point records that the call requestID names, in every argument, a
// source the user typed — a page at their URL, a file at their path: its
// output, when it arrives, is content the user pointed at (Pointed,
// Source.Pointed). A call of a tool that lists records (a channel, an
// inbox, a search) is not one: many write there.
func (ix *Index) Point(requestID string) {
	requestID = clip(requestID)
	if requestID == "" || slices.ContainsFunc(ix.pointed, func(c callTokens) bool { return c.requestID == requestID }) {
		return
	}
	if len(ix.pointed) == MaxPointed {
		ix.pointed = slices.Delete(ix.pointed, 0, 1)
	}
	ix.pointed = append(ix.pointed, callTokens{requestID: requestID})
}

// Pointed takes the result of the call requestID: whether the user
// pointed at its source (Point), forgetting the call.
func (ix *Index) Pointed(requestID string) bool {
	requestID = clip(requestID)
	i := slices.IndexFunc(ix.pointed, func(c callTokens) bool { return c.requestID == requestID })
	if i < 0 {
		return false
	}
	ix.pointed = slices.Delete(ix.pointed, i, i+1)
	return true
}

// pointedSlot reports whether the content in slot src is one the user
// pointed at: not the last slot once it stands for many contents
// (Source.Later), which the tokens of earlier ones still cite.
func (ix *Index) pointedSlot(src int) bool {
	return src >= 0 && src < len(ix.Sources) && ix.Sources[src].Pointed && !ix.Sources[src].Later
}

// placeKey is a place as pointing compares it: one token, lower-cased,
// without the punctuation around it, a leading http:// or https://, or
// what trails it ('/', '.', '#': the user's www.dora.example is fetched as
// https://www.dora.example/); ok is false for what cannot point at one
// source. A place has a letter and a '.' — a URL, a host, a file's name
// or path — and no '@'. Words select what many wrote: a search's terms,
// a folder, a channel; so does a repository or a team's channel
// (acme/widgets: its issues, its posts); an e-mail address is a mailbox
// anyone writes to; a date or a number picks a day's events or an
// account's statement. What leads a path stays: ../notes.txt,
// /notes.txt and ~/notes.txt are not the user's notes.txt (as for
// Typed).
func placeKey(s string) (string, bool) {
	t := strings.TrimFunc(normalExact(s), func(r rune) bool { return !tokenRune(r) })
	if t == "" || strings.ContainsFunc(t, func(r rune) bool { return !tokenRune(r) || r == '@' }) {
		return "", false
	}
	if rest, ok := strings.CutPrefix(t, "https://"); ok {
		t = rest
	} else if rest, ok := strings.CutPrefix(t, "http://"); ok {
		t = rest
	}
	t = strings.TrimRightFunc(t, connector)
	if !strings.ContainsRune(t, '.') || !strings.ContainsFunc(t, unicode.IsLetter) {
		return "", false
	}
	return t, true
}

// typedPlaces returns the hashes of the places a text the user wrote
// names (placeKey), kept with its typed spans: a place the user typed,
// not one of their words, an approved call's value (Approve) or a trusted
// source's, which are trusted but were never typed.
func typedPlaces(text string) []uint64 {
	var hs []uint64
	for run := range strings.FieldsFuncSeq(normalExact(text), func(r rune) bool { return !tokenRune(r) }) {
		if k, ok := placeKey(run); ok {
			hs = append(hs, placeHash(k))
		}
	}
	return hs
}

// TypedPlace reports whether s is a place (placeKey) the user typed in
// their own words (AddTrusted).
func (ix *Index) TypedPlace(s string) bool {
	k, ok := placeKey(s)
	return ok && ix.isTyped(placeHash(k))
}

// placeHash is the hash a place key is kept under among the typed spans,
// apart from any span's.
func placeHash(key string) uint64 { return hashOf("\x00place " + key) }

// maxMentionWords bounds what HoldsWords takes for a name: a detail holds
// a name or two, not a sentence.
const maxMentionWords = 4

// HoldsWords reports whether texts, the texts of a value, hold the words
// of name, in order and whole (case aside): "dora@example.com" and "Dora
// Smith's address" hold "Dora", "adorable.example" does not. Each text
// must, and in a text each token that matters — an address, a URL, an
// account — must: a list, a comma-joined text or a display name that says
// the name once ("Dora <fred@evil.example>", "dora@x.example,
// fred@evil.example") holds beside it what does not. A name without three
// letters is held by nothing.
func HoldsWords(texts, name []string) bool {
	want := words(strings.Join(name, " "))
	letters := 0
	for _, w := range want {
		for _, r := range w {
			if unicode.IsLetter(r) {
				letters++
			}
		}
	}
	if len(texts) == 0 || len(want) == 0 || len(want) > maxMentionWords || letters < 3 {
		return false
	}
	for _, t := range texts {
		if !holdsEach(t, want) {
			return false
		}
	}
	return true
}

// holdsEach reports whether each token that matters of t holds the words
// want, or, for a text without one (a name), t as a whole does.
func holdsEach(t string, want []string) bool {
	ids := 0
	for run := range strings.FieldsFuncSeq(strings.ToLower(t), func(r rune) bool { return !tokenRune(r) }) {
		if run = strings.TrimFunc(run, connector); !matters(run) {
			continue
		}
		if ids++; !holdsRun(words(run), want) {
			return false
		}
	}
	return ids > 0 || holdsRun(words(t), want)
}

// holdsRun reports whether got holds want as a contiguous run.
func holdsRun(got, want []string) bool {
	for i := 0; i+len(want) <= len(got); i++ {
		if slices.Equal(got[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

// words are s's runs of letters and digits, lower-cased.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}
