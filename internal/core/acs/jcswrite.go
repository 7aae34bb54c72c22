package acs

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"reflect"
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
	sum, err := RequestSumOf(params, raw)
	if err != nil {
		return "", err
	}
	return hexSum(sum), nil
}

// RequestSumOf is RequestHashOf before its hex encoding: the SHA-256 itself.
func RequestSumOf(params any, raw json.RawMessage) ([sha256.Size]byte, error) {
	var buf [4096]byte
	if c, ok := appendCanonicalGo(buf[:0], params, 0); ok {
		return sha256.Sum256(c), nil
	}
	c, err := CanonicalRaw(raw)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(c), nil
}

// entryParts are members of a ContextEntry given in the form a Guardian
// holds them, so that they are written without being built: the SHA-256
// whose hex is request_hash (nil: the entry's RequestHash), the provenance
// whose Summarize is provenance_summary (unused: the entry's
// ProvenanceSummary).
type entryParts struct {
	requestSum    *[sha256.Size]byte
	provenance    []Provenance
	useProvenance bool
}

// appendCanonicalEntry appends the RFC 8785 form of e, members in sorted
// order and empty optional ones omitted as encoding/json omits them; parts
// (nil: none) stand for some of e's members.
func appendCanonicalEntry(b []byte, e *ContextEntry, parts *entryParts) ([]byte, bool) {
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
	if parts != nil && parts.useProvenance {
		if len(parts.provenance) > 0 {
			b = appendSummaryOf(b, parts.provenance, &ok)
		}
	} else if p := e.ProvenanceSummary; p != nil {
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
	if parts != nil && parts.requestSum != nil {
		b = append(b, `,"request_hash":"`...)
		b = hex.AppendEncode(b, parts.requestSum[:])
		b = append(b, '"')
	} else if e.RequestHash != "" {
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

// appendSummaryOf appends the provenance_summary member of an entry whose
// summary is Summarize(ps), ps not empty, as appendCanonicalEntry writes
// that summary, without its map: the distinct origins are few, counted on
// the stack in order of first appearance and sorted there for
// entry_count_by_origin.
func appendSummaryOf(b []byte, ps []Provenance, ok *bool) []byte {
	var originBuf [8]string
	var countBuf [8]int
	origins, counts := originBuf[:0], countBuf[:0]
	for _, p := range ps {
		i := slices.Index(origins, p.Origin)
		if i < 0 {
			origins, counts = append(origins, p.Origin), append(counts, 0)
			i = len(origins) - 1
		}
		counts[i]++
	}
	var orderBuf [8]int
	order := orderBuf[:0]
	for i := range origins {
		// Insertion by name: the names are distinct.
		j := len(order)
		order = append(order, i)
		for ; j > 0 && origins[order[j-1]] > origins[i]; j-- {
			order[j] = order[j-1]
		}
		order[j] = i
	}
	b = append(b, `,"provenance_summary":{"entry_count":`...)
	b = appendCanonicalInt(b, len(ps), ok)
	b = append(b, `,"entry_count_by_origin":{`...)
	for j, i := range order {
		if j > 0 {
			b = append(b, ',')
		}
		*ok = *ok && asciiKey(origins[i])
		var kok bool
		b, kok = appendCanonicalString(b, origins[i])
		*ok = *ok && kok
		b = append(b, ':')
		b = appendCanonicalInt(b, counts[i], ok)
	}
	b = append(b, `},"origins_seen":[`...)
	for i, o := range origins {
		if i > 0 {
			b = append(b, ',')
		}
		var sok bool
		b, sok = appendCanonicalString(b, o)
		*ok = *ok && sok
	}
	return append(b, "]}"...)
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

// The response writer below is the fast canonical form of the envelope
// every decision publishes and signs: marshalling it and re-parsing the
// text cost about 16 µs a decision in the profile. Like the rest of this
// file it reports ok=false wherever it cannot be sure of writing the
// reference bytes (Canonical of json.Marshal), and Canonical then takes the
// reference path.

// maxGoDepth bounds the nesting the writer follows through policy_data and
// payload: a cyclic map would otherwise recurse without end (encoding/json
// reports those as errors, which the reference path then returns), and it
// stays far below jsontext's limit of 10000 levels.
const maxGoDepth = 256

// jsontextMaxDepth is jsontext's nesting limit, beyond which the reference
// path fails.
const jsontextMaxDepth = 10000

// appendCanonicalResponse appends the RFC 8785 form of r.
func appendCanonicalResponse(b []byte, r *Response) ([]byte, bool) {
	ok := true
	b = append(b, '{')
	if r.Error != nil {
		b = append(b, `"error":`...)
		if b, ok = appendCanonicalRPCError(b, r.Error); !ok {
			return b, false
		}
		b = append(b, ',')
	}
	b = append(b, `"id":`...)
	if b, ok = appendCanonicalID(b, r.ID); !ok {
		return b, false
	}
	b = append(b, `,"jsonrpc":`...)
	if b, ok = appendCanonicalString(b, r.JSONRPC); !ok {
		return b, false
	}
	if r.Result != nil {
		b = append(b, `,"result":`...)
		if b, ok = appendCanonicalResult(b, r.Result); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendCanonicalID appends a JSON-RPC id held as raw JSON. Only what ids
// are in practice — null, a string, a short integer, written exactly as
// JSON — is handled; anything else (whitespace around it, fractions,
// exponents, -0, objects) is left to the reference path. A nil id is what
// encoding/json writes as null; an empty non-nil one is a marshal error.
func appendCanonicalID(b []byte, id json.RawMessage) ([]byte, bool) {
	if id == nil {
		return append(b, "null"...), true
	}
	switch {
	case string(id) == "null":
		return append(b, id...), true
	case len(id) >= 2 && id[0] == '"':
		if plainJSONString(id) {
			// Nothing to unescape and nothing to escape: the canonical
			// form is the id's own bytes.
			return append(b, id...), true
		}
		// AppendUnquote rejects trailing bytes, raw control characters,
		// invalid escapes and invalid UTF-8, all of which the reference
		// path fails on as well.
		var buf [128]byte
		u, err := jsontext.AppendUnquote(buf[:0], id)
		if err != nil {
			return b, false
		}
		return appendCanonicalString(b, string(u))
	}
	digits := id
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	// At most 15 digits: exactly representable, so ECMAScript prints them
	// back unchanged.
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && (len(digits) > 1 || len(id) > 1)) {
		return b, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return b, false
		}
	}
	return append(b, id...), true
}

// plainJSONString reports a JSON string token whose content has no escape,
// no raw control character and no '"' (so the token ends at its last
// byte) and is valid UTF-8: its RFC 8785 form is itself.
func plainJSONString(s []byte) bool {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return false
	}
	in := s[1 : len(s)-1]
	for _, c := range in {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(in)
}

// appendMember appends ,"name": — name is a literal ASCII member name
// needing no escapes. first leaves out the comma.
func appendMember(b []byte, first bool, name string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendStringMember appends a string member; first as in appendMember.
func appendStringMember(b []byte, first bool, name, val string) ([]byte, bool) {
	return appendCanonicalString(appendMember(b, first, name), val)
}

func appendCanonicalStrings(b []byte, list []string) ([]byte, bool) {
	if list == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendCanonicalString(b, s); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendCanonicalResult appends the RFC 8785 form of res: members in
// sorted order, the omitempty ones left out when empty.
func appendCanonicalResult(b []byte, res *Result) ([]byte, bool) {
	ok := true
	b = append(b, '{')
	if b, ok = appendStringMember(b, true, "acs_version", res.ACSVersion); !ok {
		return b, false
	}
	if a := res.AskDetails; a != nil {
		b = appendMember(b, false, "ask_details")
		if b, ok = appendCanonicalAskDetails(b, a); !ok {
			return b, false
		}
	}
	if res.ChainHash != "" {
		if b, ok = appendStringMember(b, false, "chain_hash", res.ChainHash); !ok {
			return b, false
		}
	}
	if len(res.CitedProvenanceIDs) > 0 {
		b = appendMember(b, false, "cited_provenance_ids")
		if b, ok = appendCanonicalStrings(b, res.CitedProvenanceIDs); !ok {
			return b, false
		}
	}
	if b, ok = appendStringMember(b, false, "decision", string(res.Decision)); !ok {
		return b, false
	}
	if m := res.Metadata; m != nil {
		b = appendMember(b, false, "metadata")
		b = append(b, '{')
		if m.Evaluator != "" {
			if b, ok = appendStringMember(b, true, "evaluator", m.Evaluator); !ok {
				return b, false
			}
		}
		b = append(b, '}')
	}
	if len(res.Payload) > 0 {
		b = appendMember(b, false, "payload")
		if b, ok = appendCanonicalGo(b, res.Payload, 2); !ok {
			return b, false
		}
	}
	if len(res.PolicyData) > 0 {
		b = appendMember(b, false, "policy_data")
		if b, ok = appendCanonicalGo(b, res.PolicyData, 2); !ok {
			return b, false
		}
	}
	if len(res.PolicyReferences) > 0 {
		b = appendMember(b, false, "policy_references")
		b = append(b, '[')
		for i := range res.PolicyReferences {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendCanonicalPolicyReference(b, &res.PolicyReferences[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	if len(res.ReasonCodes) > 0 {
		b = appendMember(b, false, "reason_codes")
		if b, ok = appendCanonicalStrings(b, res.ReasonCodes); !ok {
			return b, false
		}
	}
	if res.Reasoning != "" {
		if b, ok = appendStringMember(b, false, "reasoning", res.Reasoning); !ok {
			return b, false
		}
	}
	if b, ok = appendStringMember(b, false, "request_id", res.RequestID); !ok {
		return b, false
	}
	if s := res.Signature; s != nil {
		b = appendMember(b, false, "signature")
		if b, ok = appendCanonicalSignature(b, s); !ok {
			return b, false
		}
	}
	if b, ok = appendStringMember(b, false, "type", res.Type); !ok {
		return b, false
	}
	return append(b, '}'), true
}

func appendCanonicalAskDetails(b []byte, a *AskDetails) ([]byte, bool) {
	ok := true
	b = append(b, `{"approver":{`...)
	first := true
	if a.Approver.Endpoint != "" {
		if b, ok = appendStringMember(b, true, "endpoint", a.Approver.Endpoint); !ok {
			return b, false
		}
		first = false
	}
	if b, ok = appendStringMember(b, first, "id", a.Approver.ID); !ok {
		return b, false
	}
	if b, ok = appendStringMember(b, false, "type", a.Approver.Type); !ok {
		return b, false
	}
	b = append(b, '}')
	if a.Context != "" {
		if b, ok = appendStringMember(b, false, "context", a.Context); !ok {
			return b, false
		}
	}
	if len(a.Options) > 0 {
		b = appendMember(b, false, "options")
		if b, ok = appendCanonicalStrings(b, a.Options); !ok {
			return b, false
		}
	}
	if b, ok = appendStringMember(b, false, "question", a.Question); !ok {
		return b, false
	}
	if a.TimeoutDisposition != "" {
		if b, ok = appendStringMember(b, false, "timeout_disposition", a.TimeoutDisposition); !ok {
			return b, false
		}
	}
	b = appendMember(b, false, "timeout_seconds")
	b = appendCanonicalInt(b, a.TimeoutSeconds, &ok)
	return append(b, '}'), ok
}

func appendCanonicalPolicyReference(b []byte, p *PolicyReference) ([]byte, bool) {
	ok := true
	b = append(b, '{')
	first := true
	for _, m := range [...]struct{ name, val string }{
		{"policy_id", p.PolicyID},
		{"policy_name", p.PolicyName},
		{"policy_version", p.PolicyVersion},
		{"rule_id", p.RuleID},
	} {
		if m.val == "" {
			continue
		}
		if b, ok = appendStringMember(b, first, m.name, m.val); !ok {
			return b, false
		}
		first = false
	}
	return append(b, '}'), true
}

func appendCanonicalSignature(b []byte, s *Signature) ([]byte, bool) {
	ok := true
	b = append(b, '{')
	if b, ok = appendStringMember(b, true, "algorithm", s.Algorithm); !ok {
		return b, false
	}
	if b, ok = appendStringMember(b, false, "key_id", s.KeyID); !ok {
		return b, false
	}
	if b, ok = appendStringMember(b, false, "value", s.Value); !ok {
		return b, false
	}
	return append(b, '}'), true
}

func appendCanonicalRPCError(b []byte, e *RPCError) ([]byte, bool) {
	ok := true
	b = append(b, `{"code":`...)
	if b = appendCanonicalInt(b, e.Code, &ok); !ok {
		return b, false
	}
	if d := e.Data; d != nil {
		b = append(b, `,"data":{`...)
		first := true
		if d.Method != "" {
			if b, ok = appendStringMember(b, true, "method", d.Method); !ok {
				return b, false
			}
			first = false
		}
		if b, ok = appendStringMember(b, first, "reason", d.Reason); !ok {
			return b, false
		}
		if d.SkewWindowMS != 0 {
			const maxExact = 1<<53 - 1
			if d.SkewWindowMS > maxExact || d.SkewWindowMS < -maxExact {
				return b, false
			}
			b = appendMember(b, false, "skew_window_ms")
			b = strconv.AppendInt(b, d.SkewWindowMS, 10)
		}
		if len(d.SupportedVersions) > 0 {
			b = appendMember(b, false, "supported_versions")
			if b, ok = appendCanonicalStrings(b, d.SupportedVersions); !ok {
				return b, false
			}
		}
		if len(d.Violations) > 0 {
			b = appendMember(b, false, "violations")
			b = append(b, '[')
			for i, v := range d.Violations {
				if i > 0 {
					b = append(b, ',')
				}
				if b, ok = appendStringMember(append(b, '{'), true, "message", v.Message); !ok {
					return b, false
				}
				if b, ok = appendStringMember(b, false, "pointer", v.Pointer); !ok {
					return b, false
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if b, ok = appendStringMember(b, false, "message", e.Message); !ok {
		return b, false
	}
	if s := e.Signature; s != nil {
		b = appendMember(b, false, "signature")
		if b, ok = appendCanonicalSignature(b, s); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// appendCanonicalGo appends the RFC 8785 form of a Go value as
// encoding/json marshals it, as built for policy_data and payload: decoded
// JSON and the maps, slices, strings and integers the core adds to it,
// inside depth enclosing arrays and objects; nil maps and slices are null,
// as encoding/json writes them. Values of any other type (structs,
// floats, marshalers) are marshalled and canonicalised on their own:
// RFC 8785 forms each value independently of where it sits, so that is the
// reference's bytes for them.
func appendCanonicalGo(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxGoDepth {
		return b, false
	}
	var n int
	var item func(int) any
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendCanonicalString(b, v)
	case bool:
		return strconv.AppendBool(b, v), true
	case int:
		ok := true
		b = appendCanonicalInt(b, v, &ok)
		return b, ok
	case json.Number:
		// encoding/json writes an empty Number as 0 and refuses an invalid
		// one; neither is worth a fast path.
		if !validNumber(string(v)) {
			return b, false
		}
		return appendCanonicalNumber(b, v)
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
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
			if b, ok = appendCanonicalGo(b, m.value, depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case map[string]string:
		if v == nil {
			return append(b, "null"...), true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			if !asciiKey(k) {
				return b, false
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendCanonicalString(b, k); !ok {
				return b, false
			}
			b = append(b, ':')
			if b, ok = appendCanonicalString(b, v[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		n, item = len(v), func(i int) any { return v[i] }
	case []map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		n, item = len(v), func(i int) any { return v[i] }
	case []string:
		return appendCanonicalStrings(b, v)
	case *RPCError:
		if v == nil {
			return append(b, "null"...), true
		}
		return appendCanonicalRPCError(b, v)
	default:
		return appendCanonicalOther(b, v, depth)
	}
	// An array of either kind: the loop stays in this function, since
	// recursion through a second one would let b escape (and with it
	// Canonical's stack buffer).
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendCanonicalGo(b, item(i), depth+1); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

// appendCanonicalOther writes named strings, booleans and integers (rule
// modes, decisions, counters) directly, unless their type marshals itself,
// and everything else by marshalling it alone.
func appendCanonicalOther(b []byte, v any, depth int) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	t := rv.Type()
	custom := t.Implements(marshalerType) || t.Implements(textMarshalerType) ||
		reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)
	if !custom {
		const maxExact = 1<<53 - 1
		switch rv.Kind() {
		case reflect.String:
			return appendCanonicalString(b, rv.String())
		case reflect.Bool:
			return strconv.AppendBool(b, rv.Bool()), true
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n := rv.Int()
			if n > maxExact || n < -maxExact {
				return b, false
			}
			return strconv.AppendInt(b, n, 10), true
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			n := rv.Uint()
			if n > maxExact {
				return b, false
			}
			return strconv.AppendUint(b, n, 10), true
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	c := jsontext.Value(raw)
	if c.Canonicalize() != nil {
		return b, false
	}
	// The value nests at most len(c)/2 levels; within the whole document
	// that must stay within jsontext's limit, or the reference fails.
	if depth+len(c)/2 > jsontextMaxDepth {
		return b, false
	}
	return append(b, c...), true
}

// validNumber reports whether s is a JSON number, as encoding/json checks
// a json.Number before writing it.
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}
