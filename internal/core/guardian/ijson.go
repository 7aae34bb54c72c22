package guardian

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/turnguard/turnguard/internal/core/acs"
)

// fastDecodeIJSON is the fast path of decodeIJSON: a single-pass parser over
// the byte slice that builds the same generic document (map[string]any,
// []any, string, json.Number, bool, nil) without a token stream, a reader
// or a separate duplicate-name namespace. The profile showed the jsontext
// token decoder at a sixth of Decide's time.
//
// It is deliberately conservative: it accepts only input it is sure
// jsontext accepts too (RFC 8259 grammar, valid UTF-8, no duplicate names,
// bounded depth) and reports ok=false for anything else — malformed input,
// but also the rare valid input it does not bother with (surrogate \u
// escapes, very deep nesting). The caller then runs the jsontext decoder,
// which decides and words the error exactly as before, so refusals are
// unchanged.
//
// known are strings the caller has that the document may repeat (the
// session id and tenant its subject names): a string equal to one shares
// its bytes. Only the first len(ijsonParser.known) count.
func fastDecodeIJSON(data []byte, known ...string) (doc any, params []byte, ok bool) {
	p := ijsonParser{data: data}
	copy(p.known[:], known)
	p.skipSpace()
	v, ok := p.value(0, &params)
	if !ok {
		return nil, nil, false
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, nil, false
	}
	return v, params, true
}

// maxFastDepth bounds the fast parser's recursion; deeper documents take the
// jsontext path, which has its own (larger) limit and error.
const maxFastDepth = 512

type ijsonParser struct {
	data []byte
	pos  int
	// recent are the last strings parsed, boxed, for a string that
	// repeats one of them to share its value: an envelope names the same
	// ids more than once (its JSON-RPC id is usually its request id, a
	// turn's payload the turn its metadata names), and each string is two
	// allocations (its bytes and its box). Strings are immutable, so
	// sharing one changes nothing for whoever reads the document.
	recent     [16]any
	recentNext int
	known      [2]string
}

func (p *ijsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

// value parses one value at p.pos (whitespace already skipped). At the top
// level (params != nil) it records the raw bytes of the params member.
func (p *ijsonParser) value(depth int, params *[]byte) (any, bool) {
	if p.pos >= len(p.data) || depth > maxFastDepth {
		return nil, false
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth, params)
	case c == '[':
		return p.array(depth)
	case c == '"':
		if v, ok := p.commonValue(); ok {
			return v, true
		}
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, false
}

func (p *ijsonParser) literal(lit string) bool {
	if len(p.data)-p.pos < len(lit) || string(p.data[p.pos:p.pos+len(lit)]) != lit {
		return false
	}
	p.pos += len(lit)
	return true
}

func (p *ijsonParser) object(depth int, params *[]byte) (any, bool) {
	p.pos++ // '{'
	obj := make(map[string]any, 8)
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, true
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, false
		}
		key, ok := p.key()
		if !ok {
			return nil, false
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, false
		}
		p.pos++
		p.skipSpace()
		start := p.pos
		v, ok := p.value(depth+1, nil)
		if !ok {
			return nil, false
		}
		if params != nil && key == "params" {
			*params = p.data[start:p.pos]
		}
		// A duplicate name leaves the map's size unchanged: one hash
		// operation per member instead of a lookup and an insert.
		n := len(obj)
		if obj[key] = v; len(obj) == n {
			return nil, false
		}
		switch done, ok := p.separator('}'); {
		case !ok:
			return nil, false
		case done:
			return obj, true
		}
	}
}

func (p *ijsonParser) array(depth int) (any, bool) {
	p.pos++ // '['
	arr := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, true
	}
	for {
		v, ok := p.value(depth+1, nil)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
		switch done, ok := p.separator(']'); {
		case !ok:
			return nil, false
		case done:
			return arr, true
		}
	}
}

// separator consumes what follows a member or element: a comma (and the
// space after it), or closer, which ends the object or array (done).
func (p *ijsonParser) separator(closer byte) (done, ok bool) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return false, false
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		p.skipSpace()
		return false, true
	case closer:
		p.pos++
		return true, true
	}
	return false, false
}

// key parses a member name. Names from the ACS schemas are interned: the
// lookup with string(bytes) does not allocate, so the common names cost
// nothing.
func (p *ijsonParser) key() (string, bool) {
	end := p.pos + 1
	for end < len(p.data) && p.data[end] != '"' && p.data[end] != '\\' && p.data[end] >= 0x20 {
		end++
	}
	if end < len(p.data) && p.data[end] == '"' {
		if k, ok := memberNames[string(p.data[p.pos+1:end])]; ok {
			p.pos = end + 1
			return k, true
		}
	}
	k, ok := p.str()
	if !ok {
		return "", false
	}
	return k.(string), true
}

// commonValue returns the pre-boxed value of a string that envelopes repeat
// (versions, method names, origins, roles), saving both the string and its
// interface box; ok=false for any other string.
func (p *ijsonParser) commonValue() (any, bool) {
	end := p.pos + 1
	for end < len(p.data) && end-p.pos <= maxCommonValue && p.data[end] != '"' && p.data[end] != '\\' && p.data[end] >= 0x20 {
		end++
	}
	if end < len(p.data) && p.data[end] == '"' {
		if v, ok := commonValues[string(p.data[p.pos+1:end])]; ok {
			p.pos = end + 1
			return v, true
		}
	}
	return nil, false
}

const maxCommonValue = 32

// commonValues holds the boxed form of strings envelopes repeat.
var commonValues = func() map[string]any {
	m := map[string]any{}
	for _, v := range []string{
		"2.0", "0.1.0", "text", "user", "assistant", "system", "tool", "tool_output", "retrieved",
		"a2a_inbound", "external", "agent_generated", "user_input", "system_prompt", "development",
		"staging", "production", "success", "completed", "error", "failed", "cancelled", "HMAC-SHA256",
		"user_message", "subagent", "scheduled", "webhook", "api", "manual", "timeout",
		"model", "human", "read", "write", "exec", "process.execute", "network.egress", "filesystem.read",
		"filesystem.write", "skill", "memory_store", "mcp_server", "knowledge_source", "markdown",
	} {
		m[v] = v
	}
	for _, spec := range acs.Methods() {
		m[spec.Method] = spec.Method
	}
	return m
}()

// memberNames interns the member names of ACS envelopes and payloads.
var memberNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		"jsonrpc", "method", "id", "params", "acs_version", "request_id", "timestamp", "nonce", "tenant_id",
		"metadata", "payload", "signature", "algorithm", "value", "key_id", "agent_id", "agent_name",
		"session_id", "turn_id", "parent_turn_id", "session_state", "chain_hash", "environment", "platform",
		"platform_version", "user_context", "user_id", "roles", "authentication_method",
		"tool", "name", "version", "provider", "arguments", "capability", "operation", "raw_command",
		"exit_status", "result", "content", "provenance", "provenance_id", "origin", "source_id",
		"derived_from", "triggered_by", "expected_inputs", "outcome", "step_count", "tool_call_count",
		"reason", "session_reason", "subagent_session_id", "parent_session_id", "parent_step_id",
		"intent_derivation", "echo", "message", "role", "text", "type", "query", "results", "source",
		"score", "intent", "summary", "trigger", "uri", "url", "path", "data", "error", "status",
		"added", "body", "change_reason", "changed", "components", "composed_skills", "composition",
		"declared_capabilities", "definition", "description", "digest", "digest_verified", "duration_ms",
		"endpoint", "entries_compacted", "entries_to_compact", "estimated_input_tokens", "final_chain_hash",
		"format", "framework", "framework_version", "goal", "items", "lineage_depth_after", "load_path",
		"load_trigger", "mcp_servers", "memory_id", "memory_store", "models", "outputs", "parsed",
		"parser_provenance", "platform_context", "policy_mode", "post_compact_chain_hash",
		"pre_compact_chain_hash", "pre_compact_provenance_summary", "raw", "reasoning", "ref",
		"registration_provenance", "registration_ref", "removed", "replaced_by", "request_id_ref", "scope",
		"scope_mode", "skill", "skill_id", "step_id", "stored_at", "subagent_intent", "subagent_step_count",
		"target_summary_tokens", "tools", "trigger_source", "trigger_type", "user_identity",
	} {
		m[n] = n
	}
	return m
}()

// str parses a string. Strings without escapes (nearly all) are one
// allocation; escapes other than surrogate \u escapes are decoded here.
func (p *ijsonParser) str() (any, bool) {
	p.pos++ // '"'
	start := p.pos
	for i := start; i < len(p.data); i++ {
		c := p.data[i]
		switch {
		case c == '"':
			s := p.data[start:i]
			if !utf8.Valid(s) {
				return nil, false
			}
			p.pos = i + 1
			for _, r := range p.recent {
				if rs, ok := r.(string); ok && rs == string(s) {
					return r, true
				}
			}
			var v any
			for _, k := range p.known {
				if k != "" && k == string(s) {
					v = k
					break
				}
			}
			if v == nil {
				v = string(s)
			}
			p.recent[p.recentNext] = v
			p.recentNext = (p.recentNext + 1) % len(p.recent)
			return v, true
		case c == '\\':
			return p.escapedStr(start)
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

func (p *ijsonParser) escapedStr(start int) (any, bool) {
	buf := make([]byte, 0, 64)
	i := start
	for i < len(p.data) {
		c := p.data[i]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				return nil, false
			}
			p.pos = i + 1
			return string(buf), true
		case c < 0x20:
			return nil, false
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(p.data) {
			return nil, false
		}
		switch e := p.data[i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if i+6 > len(p.data) {
				return nil, false
			}
			var r rune
			for _, h := range p.data[i+2 : i+6] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return nil, false
				}
			}
			if r >= 0xD800 && r <= 0xDFFF {
				// Surrogates (pairs or lone, the latter invalid) are left
				// to jsontext.
				return nil, false
			}
			buf = utf8.AppendRune(buf, r)
			i += 6
			continue
		default:
			return nil, false
		}
		i += 2
	}
	return nil, false
}

// number parses RFC 8259 number grammar and keeps the text exact.
func (p *ijsonParser) number() (any, bool) {
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		digits()
	default:
		return nil, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	n := json.Number(d[p.pos:i])
	p.pos = i
	return n, true
}
