package lineage

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Origin is where a value came from.
type Origin string

// Origins, from the most to the least trusted.
const (
	// FromUser: every token of the value is in the user's words (or a
	// source the catalog trusts).
	FromUser Origin = "user"
	// FromModel: some token was seen nowhere: the model's own, or made up
	// from several places.
	FromModel Origin = "model"
	// FromNothing: the value has no token to trace (a small number, a
	// flag, "ok").
	FromNothing Origin = "none"
	// FromUntrusted: a token that matters (an account, an address, a URL,
	// a path) is found only in untrusted content; or the value is short
	// and each of its words was seen, one of them only in untrusted
	// content; or the index was full (or missed content) and a token was
	// seen nowhere.
	FromUntrusted Origin = "untrusted"
)

const (
	// maxShortWords: a value of at most this many words is traced by its
	// words as well; a longer one (a message body, a document) only by
	// its tokens that matter, since the words of prose are found
	// everywhere.
	maxShortWords = 8
	// maxEvidence bounds the sources and tokens a Lineage cites.
	maxEvidence = 4
	// maxEvidenceToken bounds a token cited.
	maxEvidenceToken = 64
)

// Lineage is where one value came from, and why.
type Lineage struct {
	Origin Origin
	// Sources are the untrusted contents (indexes into Index.Sources) the
	// value's untrusted tokens were first seen in, at most 4.
	Sources []int
	// Tokens are up to 4 of the value's tokens found only in untrusted
	// content (cut to 64 bytes).
	Tokens []string
	// Unknown: the index was full, or content entered that it has not
	// seen (Index.Unseen, Index.Miss), and a token was seen nowhere; the
	// value counts as untrusted.
	Unknown bool
	// Named: every untrusted text of the value is, whole, a field of a
	// structured untrusted output (fields.go) — a thing that output
	// listed, not words lifted from inside its text.
	Named bool
	// Typed: every text of the value is, as it is, a span the user wrote
	// (a line, a `code` span, a quoted string, a whole message) or a
	// single token that matters the user wrote; and there is at least
	// one (typed.go).
	Typed bool
	// Evidence is the strongest kind of what was traced to untrusted
	// content (the Evidence constants); empty unless Origin is
	// FromUntrusted.
	Evidence Evidence
	// Remote: a token traced to untrusted content that set a taint label
	// (Source.Taints: a fetched page, not a project file's text) names a
	// place on the network — a URL, an address at a host, a host with a
	// path (remote.go) — or is the host of one the value names.
	Remote bool
	// Pointed: every token traced to untrusted content was first seen in
	// content the user pointed at (Source.Pointed: the page at the URL
	// they typed, the file they named). Not for an Unknown value.
	Pointed bool
}

// Evidence is the kind of what a value shares with untrusted content,
// from the strongest.
type Evidence string

const (
	// Identifier: a token that matters and has letters — an account, an
	// address, a URL, a host, a path.
	Identifier Evidence = "identifier"
	// Phrase: three or more words copied whole, in order.
	Phrase Evidence = "phrase"
	// Number: a token that matters made of digits only (with separators):
	// an amount, a date, a time, a number.
	Number Evidence = "number"
	// Words: one or two words found there.
	Words Evidence = "words"
	// Unseen: the index was full or missed content, and a token was seen
	// nowhere (Lineage.Unknown).
	Unseen Evidence = "unseen"
	// Declared: the adapter's ACS provenance says the value derives from
	// untrusted content (derived_from), whatever its tokens say; set by
	// the rules engine, which reads the provenance.
	Declared Evidence = "declared"
)

// rank orders Evidence from the weakest.
func (e Evidence) rank() int {
	return slices.Index([]Evidence{"", Words, Number, Phrase, Identifier, Unseen, Declared}, e)
}

// Classify traces a value of a call's argument, given as the texts of its
// scalars (one for a string or a number; one each for the elements of a
// list or object): any text untrusted makes the value untrusted; it is the
// user's when every text with a token is.
func (ix *Index) Classify(texts ...string) Lineage {
	var out Lineage
	users, models, named, untrusted, pointed := 0, 0, 0, 0, 0
	out.Typed = len(texts) > 0
	for _, s := range texts {
		out.Typed = out.Typed && ix.typedText(s)
		l := ix.classifyText(s)
		if !l.Remote && l.Origin != FromUser {
			// A place a page named, kept apart from the untrusted tokens
			// the index had room for (Index.places).
			if t, src, ok := ix.placeIn(s); ok {
				l.Origin, l.Remote = FromUntrusted, true
				if l.Evidence.rank() < Identifier.rank() {
					l.Evidence = Identifier
				}
				if !slices.Contains(l.Tokens, t) && len(l.Tokens) < maxEvidence {
					l.Tokens = append(l.Tokens, clipTo(t, maxEvidenceToken))
				}
				if src >= 0 && !slices.Contains(l.Sources, src) && len(l.Sources) < maxEvidence {
					l.Sources = append(l.Sources, src)
				}
				l.Pointed = l.Pointed && ix.pointedSlot(src)
			}
		}
		switch l.Origin {
		case FromUntrusted:
			out.Origin = FromUntrusted
			untrusted++
			if !l.Unknown && ix.namesFields(s) {
				named++
			}
			if l.Pointed && !l.Unknown {
				pointed++
			}
			if l.Evidence.rank() > out.Evidence.rank() {
				out.Evidence = l.Evidence
			}
			out.Unknown = out.Unknown || l.Unknown
			out.Remote = out.Remote || l.Remote
			for _, src := range l.Sources {
				if len(out.Sources) < maxEvidence && !slices.Contains(out.Sources, src) {
					out.Sources = append(out.Sources, src)
				}
			}
			for _, t := range l.Tokens {
				if len(out.Tokens) < maxEvidence && !slices.Contains(out.Tokens, t) {
					out.Tokens = append(out.Tokens, t)
				}
			}
		case FromUser:
			users++
		case FromModel:
			models++
		}
	}
	switch {
	case out.Origin == FromUntrusted:
		out.Named = named == untrusted
		// A text of the model's own beside the page's (a list holding
		// the page's address and one seen nowhere) is not the page's.
		out.Pointed = pointed == untrusted && models == 0
	case models > 0:
		out.Origin = FromModel
	case users > 0:
		out.Origin = FromUser
	default:
		out.Origin = FromNothing
	}
	return out
}

type tok struct {
	text string
	hash uint64
	k    kind
}

func (ix *Index) classifyText(s string) Lineage {
	var all []tok
	n := normal(s)
	each(n, func(t string, h uint64, k kind) { all = append(all, tok{text: t, hash: h, k: k}) })
	if len(all) == 0 {
		return Lineage{Origin: FromNothing}
	}
	// A value with look-alike letters is traced to contents folded, and
	// to the user's words as it writes them (normalExact): exact maps the
	// hash of each of its tokens to the hash of the token unfolded — of
	// a spelling the user did not write when the value writes the token
	// two ways — or to 0, trusted nowhere, when the value's tokens,
	// folded and not, do not pair up (a cut falling elsewhere).
	var exact map[uint64]uint64
	if x := exactOf(s, n); x != n {
		exact = map[uint64]uint64{}
		i := 0
		each(x, func(t string, h uint64, k kind) {
			if i < len(all) && all[i].k == k && foldLookalikes(t) == all[i].text {
				if e, ok := exact[all[i].hash]; !ok || ix.isTrusted(e) {
					exact[all[i].hash] = h
				}
			} else {
				i = len(all) + 1 // they do not pair up
			}
			i++
		})
		if i != len(all) {
			for _, t := range all {
				exact[t.hash] = 0
			}
		}
	}
	// isTrusted reports whether the user wrote t as the value does.
	isTrusted := func(t tok) bool {
		if h, ok := exact[t.hash]; ok {
			return ix.isTrusted(h)
		}
		return ix.isTrusted(t.hash)
	}
	// untrustedSource is where t was first seen, folded; or as the value
	// writes it (a state written before kept contents unfolded).
	untrustedSource := func(t tok) (int, bool) {
		src, ok := ix.untrustedSource(t.hash)
		if h := exact[t.hash]; !ok && h != 0 {
			return ix.untrustedSource(h)
		}
		return src, ok
	}
	// One entry a token, a matter if it was ever emitted as one; sorted
	// by hash, so the evidence cited does not depend on map order.
	slices.SortStableFunc(all, func(a, b tok) int { return cmp.Compare(a.hash, b.hash) })
	toks := all[:0]
	for _, t := range all {
		if n := len(toks); n > 0 && toks[n-1].hash == t.hash {
			if t.k == matter {
				toks[n-1].k = matter
			}
			continue
		}
		toks = append(toks, t)
	}
	var out Lineage
	notPointed := false // a token cited from content the user did not point at
	var hosts []string  // valueHosts, read once a tainting token needs them
	hostsRead := false
	// cite takes t as traced to untrusted content: src as untrustedSource
	// returns it (the content's slot, and whether it set a taint label).
	cite := func(t tok, src int) {
		out.Origin = FromUntrusted
		src, taints := sourceTaints(src)
		notPointed = notPointed || !ix.pointedSlot(src)
		if !out.Remote && t.k == matter && taints {
			_, out.Remote = remoteHost(t.text)
			if !out.Remote {
				if !hostsRead {
					hosts, hostsRead = valueHosts(toks), true
				}
				out.Remote = slices.Contains(hosts, t.text)
			}
		}
		if len(out.Sources) < maxEvidence && !slices.Contains(out.Sources, src) {
			out.Sources = append(out.Sources, src)
		}
		if len(out.Tokens) < maxEvidence {
			out.Tokens = append(out.Tokens, clipTo(t.text, maxEvidenceToken))
		}
	}
	// A token that matters, found only in untrusted content — unless it
	// is a part of a trusted one of the value (a group of an account the
	// user typed whole: "GB33BUKB…" typed, "GB33 BUKB …" written).
	minor := minorParts(toks)
	var trustedWhole []string
	for _, t := range toks {
		if t.k == matter && len(t.text) > minMatter && isTrusted(t) {
			trustedWhole = append(trustedWhole, t.text)
		}
	}
	covered := func(t tok) bool {
		return slices.ContainsFunc(trustedWhole, func(w string) bool { return len(w) > len(t.text) && strings.Contains(w, t.text) })
	}
	if len(trustedWhole) > 0 && !slices.ContainsFunc(toks, func(t tok) bool { return t.k != pair && !isTrusted(t) && !covered(t) }) {
		// Every word of the value is the user's or a part of what the
		// user typed whole.
		return Lineage{Origin: FromUser}
	}
	for _, t := range toks {
		if t.k != matter || isTrusted(t) || minor[t.text] || covered(t) {
			continue
		}
		if ix.isOwn(t.hash) {
			// The model's own: not what a page the user pointed at wrote.
			notPointed = true
			continue
		}
		if src, ok := untrustedSource(t); ok {
			cite(t, src)
			if out.Evidence != Identifier {
				out.Evidence = Number
				if strings.ContainsFunc(t.text, unicode.IsLetter) {
					out.Evidence = Identifier
				}
			}
		} else {
			// Seen nowhere (the model's, or read off an image): beside
			// the page's address, "dora.k@mailbox.example,
			// ops@drop.example" is not what the page wrote.
			notPointed = true
		}
	}
	// An identifier seen nowhere whole, put together from parts untrusted
	// content gave: "attacker at evil dot com" written attacker@evil.com,
	// "the host evil and example.com" written evil.example.com.
	for _, t := range toks {
		if out.Origin == FromUntrusted {
			break
		}
		if t.k != matter || !strings.ContainsFunc(t.text, unicode.IsLetter) || isTrusted(t) {
			continue
		}
		if _, ok := untrustedSource(t); ok {
			continue
		}
		if src, ok := ix.assembled(t.text); ok {
			cite(t, src)
			out.Evidence = Identifier
			// Put together, not written whole: the page that wrote
			// dora.k@mailbox.example did not write dora.x@mailbox.example
			// (a short part is not even compared).
			notPointed = true
			continue
		}
		// An address at a domain only untrusted content named, as a
		// host or a link's ("our billing moved to acme-billing.com"),
		// whatever mailbox the model put before it.
		if at := strings.LastIndexByte(t.text, '@'); at > 0 && at < len(t.text)-1 {
			if d := hashOf(t.text[at+1:]); !ix.isTrusted(d) {
				if src, ok := ix.untrustedSource(d); ok {
					cite(t, src)
					out.Evidence = Identifier
					notPointed = true // the mailbox is the model's
				}
			}
		}
	}
	if out.Origin == FromUntrusted {
		out.Pointed = !notPointed
		return out
	}
	// The rest is traced by words (and tokens that matter); the pairs of
	// consecutive words only say whether a phrase was copied whole.
	var words, pairs, singles int
	var trusted, seen, pairsSeen, pairsUntrusted int
	for _, t := range toks {
		_, u := untrustedSource(t)
		u = u && !ix.isOwn(t.hash) // the model's before any content's
		tr := isTrusted(t)
		if t.k == pair {
			pairs++
			if tr || u {
				pairsSeen++
			}
			if u && !tr {
				pairsUntrusted++
			}
			continue
		}
		singles++
		if t.k == word {
			words++
		}
		if tr {
			trusted++
		}
		if tr || u {
			seen++
		}
	}
	if trusted == singles {
		return Lineage{Origin: FromUser}
	}
	// A short value whose every word was seen, one only in untrusted
	// content, and — for a phrase — whose every pair of words was seen
	// too, one pair only there: a name, a title, a channel copied from
	// it. Common words found apart do not make a phrase.
	if words <= maxShortWords && seen == singles && pairsSeen == pairs && (pairs == 0 || pairsUntrusted > 0) {
		for _, t := range toks {
			if t.k == pair || isTrusted(t) {
				continue
			}
			src, _ := untrustedSource(t)
			cite(t, src)
		}
		out.Evidence = Words
		if pairs >= 2 {
			out.Evidence = Phrase
		}
		out.Pointed = !notPointed
		return out
	}
	if (ix.Full || ix.unseen()) && seen < singles {
		return Lineage{Origin: FromUntrusted, Unknown: true, Evidence: Unseen}
	}
	return Lineage{Origin: FromModel}
}

// minorParts are the short runs of digits inside the value's longer
// tokens that matter — the year of a date, a group of a phone number:
// what untrusted content shares with the value is then the whole, or
// nothing. A page that says "2024" has not given the date 2024-05-05; a
// page that gives the date is found by the date. Every window of
// minMatter digits of a longer token is one, so a value is read once,
// not once per short number in it.
func minorParts(toks []tok) map[string]bool {
	var minor map[string]bool
	for _, o := range toks {
		if o.k != matter || len(o.text) <= minMatter {
			continue
		}
		run := 0 // digits ending at i
		for i := 0; i < len(o.text); i++ {
			if c := o.text[i]; c < '0' || c > '9' {
				run = 0
				continue
			}
			if run++; run >= minMatter {
				if minor == nil {
					minor = map[string]bool{}
				}
				minor[o.text[i+1-minMatter:i+1]] = true
			}
		}
	}
	return minor
}

// assembled reports whether the identifier id (seen nowhere whole) is
// made of parts every one of which was seen, one only in untrusted
// content, and returns that content's source. A part is a run of
// letters and digits between connectors, of minWord characters or more;
// a domain's last label (com, org, io) is too common to count.
func (ix *Index) assembled(id string) (int, bool) {
	parts := strings.FieldsFunc(id, connector)
	if i := strings.LastIndexByte(id, '.'); i > 0 && len(parts) > 1 && !strings.ContainsAny(id[i:], "/@") {
		parts = parts[:len(parts)-1]
	}
	src, found := 0, false
	for _, p := range parts {
		if utf8.RuneCountInString(p) < minWord {
			continue
		}
		h := hashOf(p)
		if ix.isTrusted(h) {
			continue
		}
		s, ok := ix.untrustedSource(h)
		if !ok {
			return 0, false // a part seen nowhere: the model's own
		}
		if !found {
			src, found = s, true
		}
	}
	return src, found
}

func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
