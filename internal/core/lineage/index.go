// Package lineage tells where the argument values of a tool call came
// from: the user's words (or a source the catalog trusts), untrusted
// content the session saw — which one — or nowhere it saw (the model's
// own). It keeps, per session, the tokens of what entered the session as
// 64-bit hashes in two bounded, sorted sets, so a value is looked up, not
// compared with every earlier output. It is part of the decision core:
// it reads nothing but its arguments.
package lineage

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Bounds on what an Index remembers (docs/OPERATING.md, Limits). A session that sees
// more stops adding and is marked Full: from then on a value with a token
// seen nowhere may have come from content that was not kept, so it counts
// as untrusted (fail closed).
const (
	// MaxUntrusted is the number of distinct tokens of untrusted content
	// kept.
	MaxUntrusted = 4096
	// MaxTrusted is the number of distinct tokens of the user's words and
	// trusted sources kept.
	MaxTrusted = 2048
	// MaxOwn is the number of distinct tokens that matter kept of the
	// model's own calls (Answered); later ones are not kept, and a later
	// content that echoes them then traces them as it would (fail
	// closed).
	MaxOwn = 1024
	// MaxPlaces is the number of places on the network (remote.go) kept
	// of contents that set a taint label, apart from MaxUntrusted: a
	// session whose untrusted tokens are all taken by its project's files
	// and builds still knows the places a page named later. Past it, the
	// index is PlacesFull.
	MaxPlaces = 1024
	// MaxSources is the number of untrusted contents a token can be
	// traced to; the tokens of later ones cite the last, "a later
	// content" (Source.Later).
	MaxSources = 16
	// maxFieldBytes bounds a source's ids and tool name as stored.
	maxFieldBytes = 256
)

// Source is one untrusted content the index holds tokens of: the envelope
// that brought it.
type Source struct {
	Seq          uint64 `json:"seq"`
	RequestID    string `json:"request_id,omitempty"`
	Hook         string `json:"hook,omitempty"`
	Tool         string `json:"tool,omitempty"`
	ProvenanceID string `json:"provenance_id,omitempty"`
	// Later marks the last slot once more contents than MaxSources were
	// seen: it stands for all of them, and names the newest.
	Later bool `json:"later,omitempty"`
	// Pointed: the content is the output of a call whose every argument
	// the user typed (Index.Point) — the page at the URL they gave, the
	// file they named — not one the model or another content chose.
	Pointed bool `json:"pointed,omitempty"`
	// Taints: the content set a taint label as it arrived (a fetched
	// page, a mail, what a subagent that read one returns), unlike a
	// project file's text or a build's output, which lineage counts
	// untrusted too. Given to AddUntrusted, not stored: each token it
	// names first keeps it (taintedEntry), as the last slot stands for
	// many contents.
	Taints bool `json:"-"`
}

// Index is what a session's contents held, as token hashes.
type Index struct {
	// Sources are the untrusted contents, in the order seen.
	Sources []Source
	// untrusted and trusted are sorted by hash, without duplicates; an
	// untrusted entry names its first source.
	untrusted []entry
	trusted   []uint64
	// fields are the hashes of the field values of untrusted structured
	// outputs (fields.go), sorted, without duplicates.
	fields []uint64
	// typed are the hashes of the spans of the user's words (typed.go),
	// sorted, without duplicates.
	typed []uint64
	// own are the hashes of the tokens that matter which the model's own
	// calls carried before the session saw them anywhere (Carry,
	// Answered), sorted, without duplicates.
	own []uint64
	// places are the tokens that name a place on the network, and their
	// hosts, first seen in content that set a taint label (Source.Taints),
	// sorted by hash, each naming that content (place).
	places []entry
	// Full is set once a token was not kept for want of room.
	Full bool
	// PlacesFull is set once a place was not kept for want of room: then a
	// place seen nowhere counts as one a page named (fail closed).
	PlacesFull bool
	// Unseen is set once content entered the session that the index will
	// never see: more calls went unreported than missing holds (or a state
	// of an earlier version said so). Like Full, it makes a value with a
	// token seen nowhere untrusted, for good.
	Unseen bool
	// asked are the calls answered ask, newest last: the tokens of their
	// arguments, trusted once the call runs (Approve).
	asked []callTokens
	// carried are the calls whose arguments held tokens that matter the
	// session had not seen (Carry), newest last, until their results
	// arrive (Answered).
	carried []callTokens
	// missing are the calls let through whose output entered the session
	// before their results were reported (Miss), until the results arrive
	// (Found): meanwhile the index is unseen too. Request ids only.
	missing []callTokens
	// pointed are the calls whose every argument the user typed (Point),
	// until their results arrive. Request ids only.
	pointed []callTokens
}

// callTokens are the tokens of a call's arguments, kept until its result
// arrives: of a call answered ask (Index.asked), or those a call carried
// first (Index.carried).
type callTokens struct {
	requestID string
	hashes    []uint64
}

// Bounds of what an Index keeps of calls answered ask.
const (
	// MaxAsked calls are remembered; an older one's approval is not
	// taken (its values stay untrusted: fail closed).
	MaxAsked = 8
	// MaxAskedTokens tokens of one call's arguments are remembered.
	MaxAskedTokens = 256
	// MaxCarried calls are remembered with the new tokens their arguments
	// carried, MaxCarriedTokens each, until their results arrive; an
	// older one's are dropped (they stay what the contents make them).
	MaxCarried       = 8
	MaxCarriedTokens = 64
	// MaxMissing calls whose output went unreported are remembered, until
	// their results arrive; one more makes the index Unseen for good.
	MaxMissing = 8
)

// Miss records that the output of the call requestID entered the session
// unreported: the session moved on before its result came (calls run in
// parallel, or an adapter that sends no results). Until the result
// arrives (Found), a value with a token seen nowhere may have come from
// it, so it counts as untrusted, as once the index is Full.
func (ix *Index) Miss(requestID string) {
	requestID = clip(requestID)
	if slices.ContainsFunc(ix.missing, func(c callTokens) bool { return c.requestID == requestID }) {
		return
	}
	if len(ix.missing) == MaxMissing {
		ix.Unseen = true
		return
	}
	ix.missing = append(ix.missing, callTokens{requestID: requestID})
}

// Found takes the result of the call requestID: if its output was
// missing, the index now sees it.
func (ix *Index) Found(requestID string) {
	requestID = clip(requestID)
	ix.missing = slices.DeleteFunc(ix.missing, func(c callTokens) bool { return c.requestID == requestID })
}

// Missing returns the request ids of the calls whose output entered the
// session unreported and whose results have not arrived (Miss), oldest
// first.
func (ix *Index) Missing() []string {
	ids := make([]string, len(ix.missing))
	for i, c := range ix.missing {
		ids[i] = c.requestID
	}
	return ids
}

// unseen reports whether content entered the session that the index has
// not seen: for good (Unseen), or until a missing result arrives.
func (ix *Index) unseen() bool { return ix.Unseen || len(ix.missing) > 0 }

type entry struct {
	hash uint64
	// src is the slot of the content that first named it (Sources), and
	// a flag in its high bit: taintedEntry on an untrusted token,
	// spareEntry on a place.
	src uint8
}

const (
	slotMask = 0x7f
	// taintedEntry marks an untrusted token whose first content set a
	// taint label: the last slot stands for many contents (Later), not
	// all of which did, and a project file read after a page is no page.
	taintedEntry = 0x80
	// spareEntry marks a place that is a URL or an address whose host
	// is itself a place: placeIn finds it by its host, so it is dropped
	// first when the places run out of room.
	spareEntry = 0x80
)

// hashOf is the token's 64-bit FNV-1a hash: a collision makes one token
// pass for another with a chance of about n²/2⁶⁵ for n tokens kept.
func hashOf(tok string) uint64 { return fnvAdd(fnvOffset, tok) }

const fnvOffset = 14695981039346656037

// fnvAdd continues an FNV-1a hash h with the bytes of s.
func fnvAdd(h uint64, s string) uint64 {
	const prime = 1099511628211
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// tokenHashes returns the hashes of the tokens of texts as the trusted
// set keeps them (normalExact: look-alikes not folded), with the other
// spellings of the hosts they name (hosts.go), sorted and distinct.
func tokenHashes(texts ...string) []uint64 {
	var hs []uint64
	add := func(_ string, h uint64, _ kind) { hs = append(hs, h) }
	for _, t := range texts {
		x := normalExact(t)
		each(x, add)
		eachHostForm(x, false, add)
	}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// mergeNew merges the sorted, distinct hashes hs into set, sorted by
// hashOf: a hash the set lacks becomes newEntry(hash) while room lasts.
// It reports whether a hash did not fit.
func mergeNew[E any](set []E, hs []uint64, room int, hashOf func(E) uint64, newEntry func(uint64) E) ([]E, bool) {
	merged := make([]E, 0, len(set)+len(hs))
	full := false
	i, j := 0, 0
	for i < len(set) || j < len(hs) {
		switch {
		case j == len(hs) || i < len(set) && hashOf(set[i]) < hs[j]:
			merged = append(merged, set[i])
			i++
		case i == len(set) || hs[j] < hashOf(set[i]):
			if room > 0 {
				merged = append(merged, newEntry(hs[j]))
				room--
			} else {
				full = true
			}
			j++
		default:
			merged = append(merged, set[i])
			i, j = i+1, j+1
		}
	}
	return merged, full
}

// mergeHashes merges sorted, distinct hashes into a set of at most max;
// it reports whether one did not fit.
func mergeHashes(set, hs []uint64, max int) ([]uint64, bool) {
	if len(hs) == 0 {
		return set, false
	}
	same := func(h uint64) uint64 { return h }
	return mergeNew(set, hs, max-len(set), same, same)
}

// AddTrusted indexes the tokens of text the user wrote, and its spans as
// typed.
func (ix *Index) AddTrusted(text string) {
	ix.AddTrustedSource(text)
	// A span not kept makes nothing Typed (fail closed): not Full. The
	// places it names are kept with them (typedPlaces).
	hs := append(typedSpans(text), typedPlaces(text)...)
	slices.Sort(hs)
	ix.typed, _ = mergeHashes(ix.typed, slices.Compact(hs), MaxTyped)
}

// AddTrustedSource indexes the tokens of the output of a source the
// catalog trusts: its values are trusted, but no command or span of it is
// one the user typed.
func (ix *Index) AddTrustedSource(text string) {
	ix.addTrustedHashes(tokenHashes(text))
}

// addTrustedHashes merges sorted, distinct hashes into the trusted set.
func (ix *Index) addTrustedHashes(hs []uint64) {
	if len(hs) == 0 {
		return
	}
	var full bool
	ix.trusted, full = mergeHashes(ix.trusted, hs, MaxTrusted)
	ix.Full = ix.Full || full
}

// AddUntrusted indexes the tokens of untrusted content src brought, its
// look-alike letters folded (normal), the identifiers it spells out
// (spelt.go) and the other spellings of the hosts it names (hosts.go).
func (ix *Index) AddUntrusted(text string, src Source) {
	var hs []uint64
	var places []placeTok
	add := func(t string, h uint64, k kind) {
		hs = append(hs, h)
		if src.Taints && k == matter {
			places = appendPlace(places, t, h)
		}
	}
	n := normal(text)
	each(n, add)
	spelt(n, func(t string) { add(t, hashOf(t), matter) })
	eachHostFormOf(text, n, add)
	slices.Sort(hs)
	// A place is the content's when no content or word of the user's
	// named it before: taken before the content's tokens are.
	places = slices.DeleteFunc(places, func(p placeTok) bool {
		_, seen := ix.untrustedSource(p.hash)
		return seen && !ix.isPlace(p.hash) || ix.isTrusted(p.hash)
	})
	id, slotted := ix.addUntrustedHashes(slices.Compact(hs), src)
	if len(places) == 0 {
		return
	}
	ix.addPlaces(places, func() uint8 {
		if !slotted {
			id, slotted = ix.source(src), true
		}
		return id
	})
}

// Distrust makes what the index took for the user's words untrusted
// content of src: a session found to be a subagent's only after its first
// messages were indexed (turnstate.Session.Adopt) was told them by its
// parent model; no user typed them. The tokens of sources the catalog
// trusts go with them, as the index does not tell the two apart (fail
// closed), no span counts as typed any more, and no content as pointed.
func (ix *Index) Distrust(src Source) {
	hs := ix.trusted
	ix.trusted, ix.typed = nil, nil
	// A page it took the user for pointing at (Point) was named by the
	// parent model: neither the calls waiting for their results nor the
	// contents already taken point at anything the user typed.
	ix.pointed = nil
	for i := range ix.Sources {
		ix.Sources[i].Pointed = false
	}
	ix.addUntrustedHashes(hs, src)
}

// addUntrustedHashes merges sorted, distinct hashes src brought into the
// untrusted set, and returns the slot it gave src, if it gave one.
func (ix *Index) addUntrustedHashes(hs []uint64, src Source) (uint8, bool) {
	if len(hs) == 0 {
		return 0, false
	}
	// The source takes a slot only when one of its tokens is new.
	id, slotted := uint8(0), false
	var full bool
	ix.untrusted, full = mergeNew(ix.untrusted, hs, MaxUntrusted-len(ix.untrusted), func(e entry) uint64 { return e.hash },
		func(h uint64) entry {
			if !slotted {
				id, slotted = ix.source(src), true
			}
			if src.Taints {
				return entry{hash: h, src: id | taintedEntry}
			}
			return entry{hash: h, src: id}
		})
	ix.Full = ix.Full || full
	return id, slotted
}

// Carry remembers, for the call requestID, the tokens that matter of its
// argument texts that the session has not seen anywhere: the model wrote
// them first. When the call's own result arrives (Answered), those it has
// still seen nowhere else become the model's own: a token's origin is
// where the session first saw it, so the output that echoes them — the
// event a calendar tool created, the booking a reservation confirms —
// does not make the model's own value untrusted, then or later. Only the
// call's own result does this: a content that arrives between the call
// and its result (an adapter that reports a result late) gives what it
// holds as any content does. Nothing is kept once the index is Full or
// Unseen: a token seen nowhere may then have come from content the index
// did not keep. It reports whether it kept anything.
func (ix *Index) Carry(requestID string, texts ...string) bool {
	if ix.Full || ix.unseen() || requestID == "" {
		return false
	}
	var hs []uint64
	carried := func(_ string, h uint64, k kind) {
		if k == matter && !ix.seen(h) {
			hs = append(hs, h)
		}
	}
	for _, t := range texts {
		n := normal(t)
		each(n, carried)
		eachHostFormOf(t, n, carried)
	}
	if len(hs) == 0 {
		return false
	}
	slices.Sort(hs)
	hs = slices.Compact(hs)
	if len(hs) > MaxCarriedTokens {
		hs = hs[:MaxCarriedTokens]
	}
	if len(ix.carried) == MaxCarried {
		ix.carried = slices.Delete(ix.carried, 0, 1)
	}
	ix.carried = append(ix.carried, callTokens{requestID: clip(requestID), hashes: hs})
	return true
}

// Answered takes the result of the call requestID, before its output is
// indexed: the tokens the call carried first that the session has still
// seen nowhere become the model's own (Carry).
func (ix *Index) Answered(requestID string) {
	i := slices.IndexFunc(ix.carried, func(c callTokens) bool { return c.requestID == requestID })
	if i < 0 {
		return
	}
	hs := ix.carried[i].hashes
	ix.carried = slices.Delete(ix.carried, i, i+1)
	if ix.Full || ix.unseen() {
		return
	}
	fresh := hs[:0:0]
	for _, h := range hs {
		if !ix.seen(h) {
			fresh = append(fresh, h)
		}
	}
	// A token not kept is traced as before (fail closed): not Full.
	ix.own, _ = mergeHashes(ix.own, fresh, MaxOwn)
}

// seen reports whether the session holds h anywhere: the user's words, a
// content, or the model's own.
func (ix *Index) seen(h uint64) bool {
	if ix.isTrusted(h) || ix.isOwn(h) {
		return true
	}
	_, ok := ix.untrustedSource(h)
	return ok
}

// AddRecords indexes the fields of text when it is a JSON or YAML object
// or list (fields.go): a tool's records, so that an argument equal to one
// of them is Named. Its tokens are indexed by AddUntrusted.
func (ix *Index) AddRecords(text string) { ix.addFieldHashes(structuredFields(text)) }

// AddFields indexes values that are, whole, fields of a tool's records —
// the scalars and keys of an object or list it returned as such — so that
// an argument equal to one is Named. Their tokens are indexed by
// AddUntrusted with the rest of the content.
func (ix *Index) AddFields(values ...string) {
	var hs []uint64
	for _, v := range values {
		if h, ok := fieldHash(v); ok {
			hs = append(hs, h)
		}
	}
	slices.Sort(hs)
	ix.addFieldHashes(slices.Compact(hs))
}

// addFieldHashes merges sorted, distinct field hashes while room lasts;
// one that does not fit is simply not Named later (fail closed), so it
// does not mark the index Full.
func (ix *Index) addFieldHashes(hs []uint64) {
	ix.fields, _ = mergeHashes(ix.fields, hs, MaxFields)
}

// Ask remembers the tokens of a call answered ask (its arguments' texts).
// A human approves a call by letting it run: when its result arrives,
// Approve makes those values trusted for the rest of the session, so the
// same value is not asked about again.
func (ix *Index) Ask(requestID string, texts []string) {
	hs := tokenHashes(texts...)
	if len(hs) > MaxAskedTokens {
		hs = hs[:MaxAskedTokens]
	}
	if len(ix.asked) == MaxAsked {
		ix.asked = slices.Delete(ix.asked, 0, 1)
	}
	ix.asked = append(ix.asked, callTokens{requestID: clip(requestID), hashes: hs})
}

// Approve takes the call requestID answered ask as approved — its result
// arrived — and trusts its arguments' tokens. It reports whether the call
// was one the index remembered.
func (ix *Index) Approve(requestID string) bool {
	i := slices.IndexFunc(ix.asked, func(a callTokens) bool { return a.requestID == requestID })
	if i < 0 {
		return false
	}
	hs := ix.asked[i].hashes
	ix.asked = slices.Delete(ix.asked, i, i+1)
	ix.addTrustedHashes(slices.Compact(hs))
	return true
}

// source returns src's slot, adding it.
func (ix *Index) source(src Source) uint8 {
	src.RequestID = clip(src.RequestID)
	src.Hook = clip(src.Hook)
	src.Tool = clip(src.Tool)
	src.ProvenanceID = clip(src.ProvenanceID)
	if len(ix.Sources) < MaxSources {
		ix.Sources = append(ix.Sources, src)
		return uint8(len(ix.Sources) - 1)
	}
	src.Later = true
	ix.Sources[MaxSources-1] = src
	return MaxSources - 1
}

func clip(s string) string {
	if len(s) <= maxFieldBytes {
		return s
	}
	cut := maxFieldBytes
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}

// untrustedSource returns the slot of the content that first named h,
// with taintedEntry set when that content set a taint label (sourceTaints
// reads it).
func (ix *Index) untrustedSource(h uint64) (int, bool) {
	i, ok := slices.BinarySearchFunc(ix.untrusted, h, func(e entry, h uint64) int { return cmp.Compare(e.hash, h) })
	if !ok {
		return 0, false
	}
	return int(ix.untrusted[i].src), true
}

// sourceTaints splits what untrustedSource returned into the content's
// slot and whether the content set a taint label (marked on the token).
func sourceTaints(src int) (int, bool) {
	return src & slotMask, src&taintedEntry != 0
}

func (ix *Index) isTyped(h uint64) bool {
	_, ok := slices.BinarySearch(ix.typed, h)
	return ok
}

func (ix *Index) isField(h uint64) bool {
	_, ok := slices.BinarySearch(ix.fields, h)
	return ok
}

func (ix *Index) isOwn(h uint64) bool {
	_, ok := slices.BinarySearch(ix.own, h)
	return ok
}

// place returns the slot of the content that first named place h.
func (ix *Index) place(h uint64) (int, bool) {
	i, ok := slices.BinarySearchFunc(ix.places, h, func(e entry, h uint64) int { return cmp.Compare(e.hash, h) })
	if !ok {
		return 0, false
	}
	return int(ix.places[i].src & slotMask), true
}

// keptPlace reports whether h is a place not spare: kept however many
// more come.
func (ix *Index) keptPlace(h uint64) bool {
	i, ok := slices.BinarySearchFunc(ix.places, h, func(e entry, h uint64) int { return cmp.Compare(e.hash, h) })
	return ok && ix.places[i].src&spareEntry == 0
}

func (ix *Index) isPlace(h uint64) bool {
	_, ok := ix.place(h)
	return ok
}

func (ix *Index) isTrusted(h uint64) bool {
	_, ok := slices.BinarySearch(ix.trusted, h)
	return ok
}

// Len returns the number of untrusted and trusted tokens kept.
func (ix *Index) Len() (untrusted, trusted int) { return len(ix.untrusted), len(ix.trusted) }

// Clone returns a deep copy.
func (ix *Index) Clone() *Index {
	if ix == nil {
		return nil
	}
	c := &Index{Sources: slices.Clone(ix.Sources), untrusted: slices.Clone(ix.untrusted), trusted: slices.Clone(ix.trusted), fields: slices.Clone(ix.fields), typed: slices.Clone(ix.typed), own: slices.Clone(ix.own),
		places: slices.Clone(ix.places), Full: ix.Full, PlacesFull: ix.PlacesFull, Unseen: ix.Unseen, asked: slices.Clone(ix.asked), carried: slices.Clone(ix.carried), missing: slices.Clone(ix.missing),
		pointed: slices.Clone(ix.pointed)}
	for i := range c.asked {
		c.asked[i].hashes = slices.Clone(c.asked[i].hashes)
	}
	for i := range c.carried {
		c.carried[i].hashes = slices.Clone(c.carried[i].hashes)
	}
	return c
}

// stored is an Index as a session's state stores it: the hashes packed in
// base64 (9 bytes an untrusted token, 8 a trusted one), not as JSON
// numbers.
type stored struct {
	Sources    []Source    `json:"sources,omitempty"`
	Untrusted  string      `json:"untrusted,omitempty"`
	Trusted    string      `json:"trusted,omitempty"`
	Fields     string      `json:"fields,omitempty"`
	Typed      string      `json:"typed,omitempty"`
	Own        string      `json:"own,omitempty"`
	Places     string      `json:"places,omitempty"`
	Full       bool        `json:"full,omitempty"`
	PlacesFull bool        `json:"places_full,omitempty"`
	Unseen     bool        `json:"unseen,omitempty"`
	Asked      []storedAsk `json:"asked,omitempty"`
	Carried    []storedAsk `json:"carried,omitempty"`
	Missing    []storedAsk `json:"missing,omitempty"`
	Pointed    []storedAsk `json:"pointed,omitempty"`
}

type storedAsk struct {
	RequestID string `json:"request_id"`
	Tokens    string `json:"tokens,omitempty"`
}

// MarshalJSON implements json.Marshaler: the stored form, AppendJSON's.
func (ix Index) MarshalJSON() ([]byte, error) { return ix.AppendJSON(nil, quoteJSON), nil }

// quoteJSON appends s as encoding/json writes a string.
func quoteJSON(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}

// AppendJSON appends the index in its stored form — the JSON of stored,
// members in its order, empty ones left out as omitempty does — with its
// strings written by quote, which must write them as encoding/json does.
// It is MarshalJSON without the marshal: statestore's encoder passes its
// own quote and writes a session's index straight into the state it
// encodes, the hashes packed and base64-encoded in place.
func (ix *Index) AppendJSON(dst []byte, quote func([]byte, string) []byte) []byte {
	dst = append(dst, '{')
	first := true
	member := func(name string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, '"', ':')
	}
	if len(ix.Sources) > 0 {
		member("sources")
		dst = append(dst, '[')
		for i := range ix.Sources {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = ix.Sources[i].appendJSON(dst, quote)
		}
		dst = append(dst, ']')
	}
	if len(ix.untrusted) > 0 {
		member("untrusted")
		dst = appendEntries(dst, ix.untrusted)
	}
	for _, m := range [...]struct {
		name   string
		hashes []uint64
	}{{"trusted", ix.trusted}, {"fields", ix.fields}, {"typed", ix.typed}, {"own", ix.own}} {
		if len(m.hashes) > 0 {
			member(m.name)
			dst = appendPacked(dst, m.hashes)
		}
	}
	if len(ix.places) > 0 {
		member("places")
		dst = appendEntries(dst, ix.places)
	}
	if ix.Full {
		member("full")
		dst = append(dst, "true"...)
	}
	if ix.PlacesFull {
		member("places_full")
		dst = append(dst, "true"...)
	}
	if ix.Unseen {
		member("unseen")
		dst = append(dst, "true"...)
	}
	for _, m := range [...]struct {
		name  string
		calls []callTokens
	}{{"asked", ix.asked}, {"carried", ix.carried}, {"missing", ix.missing}, {"pointed", ix.pointed}} {
		if len(m.calls) == 0 {
			continue
		}
		member(m.name)
		dst = append(dst, '[')
		for i, a := range m.calls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"request_id":`...)
			dst = quote(dst, a.requestID)
			if len(a.hashes) > 0 {
				dst = append(dst, `,"tokens":`...)
				dst = appendPacked(dst, a.hashes)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendEntries appends entries as a JSON string: 9 bytes each (the hash
// big-endian, then the source's slot), in unpadded base64; 9 bytes encode
// to 12 characters, no padding between.
func appendEntries(dst []byte, es []entry) []byte {
	dst = append(dst, '"')
	var b [9]byte
	for _, e := range es {
		binary.BigEndian.PutUint64(b[:8], e.hash)
		b[8] = e.src
		dst = base64.RawStdEncoding.AppendEncode(dst, b[:])
	}
	return append(dst, '"')
}

// readEntries reads what appendEntries wrote: at most max entries, sorted
// and distinct, each naming one of sources (its flag aside).
func readEntries(s string, max, sources int) ([]entry, bool) {
	u, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil || len(u)%9 != 0 || len(u)/9 > max {
		return nil, false
	}
	out := make([]entry, 0, len(u)/9)
	for i := 0; i < len(u); i += 9 {
		e := entry{hash: binary.BigEndian.Uint64(u[i:]), src: u[i+8]}
		if int(e.src&slotMask) >= sources || len(out) > 0 && out[len(out)-1].hash >= e.hash {
			return nil, false
		}
		out = append(out, e)
	}
	return out, true
}

// appendJSON appends a source as encoding/json writes it.
func (s *Source) appendJSON(dst []byte, quote func([]byte, string) []byte) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, s.Seq, 10)
	for _, m := range [...]struct{ name, v string }{
		{`,"request_id":`, s.RequestID}, {`,"hook":`, s.Hook}, {`,"tool":`, s.Tool}, {`,"provenance_id":`, s.ProvenanceID},
	} {
		if m.v != "" {
			dst = append(dst, m.name...)
			dst = quote(dst, m.v)
		}
	}
	if s.Later {
		dst = append(dst, `,"later":true`...)
	}
	if s.Pointed {
		dst = append(dst, `,"pointed":true`...)
	}
	return append(dst, '}')
}

// appendPacked appends hs as a JSON string: 8 big-endian bytes each, in
// unpadded base64. Three hashes (24 bytes) encode to 32 characters with
// no padding between, so they are packed three at a time on the stack.
func appendPacked(dst []byte, hs []uint64) []byte {
	dst = append(dst, '"')
	var b [24]byte
	for len(hs) > 0 {
		n := min(len(hs), 3)
		for i, h := range hs[:n] {
			binary.BigEndian.PutUint64(b[8*i:], h)
		}
		dst = base64.RawStdEncoding.AppendEncode(dst, b[:8*n])
		hs = hs[n:]
	}
	return append(dst, '"')
}

// unpackHashes reads what appendPacked wrote, at most max hashes, checking
// they are sorted and distinct.
func unpackHashes(s string, max int) ([]uint64, bool) {
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil || len(b)%8 != 0 || len(b)/8 > max {
		return nil, false
	}
	hs := make([]uint64, 0, len(b)/8)
	for i := 0; i < len(b); i += 8 {
		h := binary.BigEndian.Uint64(b[i:])
		if len(hs) > 0 && hs[len(hs)-1] >= h {
			return nil, false
		}
		hs = append(hs, h)
	}
	return hs, true
}

// ErrCorrupt is UnmarshalJSON's error for a stored index that no Index
// could have written.
var ErrCorrupt = errors.New("lineage index: corrupt")

// UnmarshalJSON implements json.Unmarshaler. It checks what it reads: the
// hashes sorted and distinct, within the bounds, each naming a source.
func (ix *Index) UnmarshalJSON(b []byte) error {
	var s stored
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if len(s.Sources) > MaxSources {
		return fmt.Errorf("%w: %d sources", ErrCorrupt, len(s.Sources))
	}
	untrusted, ok := readEntries(s.Untrusted, MaxUntrusted, len(s.Sources))
	if !ok {
		return fmt.Errorf("%w: untrusted tokens", ErrCorrupt)
	}
	places, ok := readEntries(s.Places, MaxPlaces, len(s.Sources))
	if !ok {
		return fmt.Errorf("%w: places", ErrCorrupt)
	}
	trusted, ok := unpackHashes(s.Trusted, MaxTrusted)
	if !ok {
		return fmt.Errorf("%w: trusted tokens", ErrCorrupt)
	}
	fields, ok := unpackHashes(s.Fields, MaxFields)
	if !ok {
		return fmt.Errorf("%w: fields", ErrCorrupt)
	}
	typed, ok := unpackHashes(s.Typed, MaxTyped)
	if !ok {
		return fmt.Errorf("%w: typed spans", ErrCorrupt)
	}
	own, ok := unpackHashes(s.Own, MaxOwn)
	if !ok {
		return fmt.Errorf("%w: own tokens", ErrCorrupt)
	}
	out := Index{Sources: s.Sources, Full: s.Full, PlacesFull: s.PlacesFull, Unseen: s.Unseen, untrusted: untrusted, places: places,
		trusted: trusted, fields: fields, typed: typed, own: own}
	var err error
	if out.asked, err = readCalls(s.Asked, MaxAsked, MaxAskedTokens, "asked"); err != nil {
		return err
	}
	if out.carried, err = readCalls(s.Carried, MaxCarried, MaxCarriedTokens, "carrying"); err != nil {
		return err
	}
	if out.missing, err = readCalls(s.Missing, MaxMissing, 0, "missing"); err != nil {
		return err
	}
	if out.pointed, err = readCalls(s.Pointed, MaxPointed, 0, "pointed"); err != nil {
		return err
	}
	*ix = out
	return nil
}

// readCalls checks and reads stored calls' tokens: at most max calls of at
// most maxTokens each, sorted and distinct, with request ids in bounds.
func readCalls(stored []storedAsk, max, maxTokens int, what string) ([]callTokens, error) {
	if len(stored) > max {
		return nil, fmt.Errorf("%w: %d %s calls", ErrCorrupt, len(stored), what)
	}
	var out []callTokens
	for _, a := range stored {
		hs, ok := unpackHashes(a.Tokens, maxTokens)
		if !ok || len(a.RequestID) > maxFieldBytes {
			return nil, fmt.Errorf("%w: %s call", ErrCorrupt, what)
		}
		out = append(out, callTokens{requestID: a.RequestID, hashes: hs})
	}
	return out, nil
}
