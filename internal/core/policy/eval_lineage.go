package policy

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/turnguard/turnguard/internal/core/acs"
	"github.com/turnguard/turnguard/internal/core/lineage"
	"github.com/turnguard/turnguard/internal/core/shellcmd"
	"github.com/turnguard/turnguard/internal/core/turnstate"
)

// Argument lineage (issue 24): under a rule set whose conditions read the
// variable lineage, the session indexes what enters it — the user's words
// as trusted, every content a tool or retrieval brings as untrusted unless
// the catalog classes the tool trusted_source — and a call's argument
// values are traced to them (internal/core/lineage).

// TrustedSourceClass is the catalog class of a tool whose output the
// session may take as the user's own words: its values are as trusted as
// what the user typed. Every other tool's output is untrusted content for
// lineage, whatever its provenance label says (an adapter can label a web
// page user_input).
const TrustedSourceClass = "trusted_source"

// RecordsClass is the catalog class of a tool whose output is records of
// its own system — a channel list, a mailbox listing, a calendar, a
// directory — rather than a document someone else wrote (a web page, a
// file's text): an argument equal, whole, to one of its fields names a
// thing it listed (LineageView.Named). A tool without it gives no
// fields, so a page shaped like a record names nothing (fail closed).
const RecordsClass = "records"

// LineageView is where one argument value of a call came from (CEL
// lineage["name"], templates .lineage.name).
type LineageView struct {
	// Origin is user, untrusted, model or none (lineage.Origin).
	Origin string `cel:"origin"`
	// RequestIDs, Tools and ProvenanceIDs name the untrusted contents the
	// value came from: the envelopes that brought them, the tools whose
	// output they were, their provenance ids where they had one. For an
	// Unknown value, RequestIDs are the calls whose output the session has
	// not seen yet.
	RequestIDs    []string `cel:"request_ids"`
	Tools         []string `cel:"tools"`
	ProvenanceIDs []string `cel:"provenance_ids"`
	// Tokens are up to 4 of the value's tokens found only there.
	Tokens []string `cel:"tokens"`
	// Unknown: the session's index was full, or content entered it
	// unseen (an unanswered call), and the value has a token seen
	// nowhere, so it counts as untrusted.
	Unknown bool `cel:"unknown"`
	// Named: the value is, whole, a field of a structured output (a
	// channel of a channel list, a user, an account of record), not
	// words lifted from inside a text (lineage.Lineage.Named).
	Named bool `cel:"named"`
	// Typed: the value is, as it is, something the user wrote — a line,
	// a `code` span, a quoted string, a whole message, or one URL, path or
	// address of theirs (lineage.Lineage.Typed): a command the user typed.
	Typed bool `cel:"typed"`
	// Evidence is the strongest kind of what the value shares with
	// untrusted content: identifier (an account, an address, a URL, a
	// path), phrase (three or more words in order), number (an amount, a
	// date, a time), words (one or two), unseen (Unknown), declared (the
	// argument's ACS provenance says so); empty unless the origin is
	// untrusted.
	Evidence string `cel:"evidence"`
	// Remote: a token of the value traced to untrusted content names a
	// place on the network — a URL, an address at a host, a host with a
	// path — or is the host of one the value names (lineage.Lineage.Remote).
	Remote bool `cel:"remote"`
	// Pointed: every token of the value traced to untrusted content was
	// first seen in the output of a call whose every argument the user
	// typed — the page at the URL they gave, the file they named
	// (lineage.Lineage.Pointed) — not content the model or another
	// content chose. Never for a value declared untrusted or unknown.
	Pointed bool `cel:"pointed"`
	// Mentions are the call's other sinks (tool.sinks) whose value is
	// the user's (origin user) and which this value holds as words, in
	// order, in each of its texts and each address or link in them
	// (dora@example.com holds the user's "Dora"; "Dora <fred@x.example>"
	// does not): what the call acts on that the value is a detail of.
	Mentions []string `cel:"mentions"`
}

// updateLineage indexes the envelope's content.
func (e *evalCtx) updateLineage() {
	if e.hook == "sessionStart" && e.sess.Envelopes == 1 && resumed(e.in.Payload) {
		// A conversation a host resumed under a new session id (Claude
		// Code's --resume --fork-session): its history is back in the
		// model's context, and the index never saw it — a value from it
		// is seen nowhere, as one from an image is.
		sessionIndex(e.sess).Unseen = true
		return
	}
	switch e.hook {
	case "userMessage", "toolCallResult", "knowledgeRetrieval", "memoryContextRetrieval", "agentTrigger":
	case "subagentStop":
		// What a subagent returns (summary.value) is what it read,
		// retold: untrusted, like any content the catalog does not
		// trust, so that a value it hands back — an address from a page
		// it read — is traced to it rather than taken for the parent's
		// own.
	default:
		return
	}
	p, _ := e.in.Payload.(map[string]any)
	pointed := false
	if ref, _ := p["request_id_ref"].(string); e.hook == "toolCallResult" && ref != "" && e.sess.Lineage != nil {
		// The output of a call that named a source the user typed.
		pointed = e.sess.Lineage.Pointed(ref)
		// A result that comes after the session moved on: its output,
		// indexed below, is no longer unseen.
		e.sess.Lineage.Found(ref)
		// What the call carried first and its output merely echoes is
		// the model's own: taken before the output is indexed.
		e.sess.Lineage.Answered(ref)
		if p["exit_status"] == "success" {
			// The call ran: if it was answered ask, a human approved it.
			e.sess.Lineage.Approve(ref)
		}
	}
	var texts []string
	unreadable := false
	for _, key := range []string{"content", "outputs", "results", "summary", "trigger_source"} {
		scalars(p[key], &texts)
		unreadable = unreadable || e.hook != "userMessage" && holdsUnreadable(p[key])
	}
	if len(texts) == 0 && !unreadable {
		return
	}
	ix := sessionIndex(e.sess)
	if e.hook == "userMessage" {
		e.indexUserMessage(ix, p)
		return
	}
	tool := e.toolView()
	// A source the catalog trusts gives trusted values, not commands the
	// user typed.
	if e.hook == "toolCallResult" && slices.Contains(tool.Classes, TrustedSourceClass) {
		for _, t := range texts {
			ix.AddTrustedSource(t)
		}
		return
	}
	// A user's activation is the user's words, but not in a subagent's
	// session, where the "user" is its parent model, nor in one a peer or
	// an event activated (indexUserMessage).
	if e.hook == "agentTrigger" && p["trigger_type"] == "user_message" && e.sess.Parent == nil && e.sess.ActivatedBy == "" {
		for _, t := range texts {
			ix.AddTrusted(t)
		}
		return
	}
	if unreadable {
		// An image, a recording, encoded data: the model reads what it
		// holds, the index cannot, so a value seen nowhere may come from
		// it.
		ix.Unseen = true
	}
	src := lineage.Source{Seq: e.in.Seq, RequestID: e.in.Req.Params.RequestID, Hook: e.hook,
		Tool: acs.TruncateStored(tool.Name, acs.MaxEvidenceBytes), Taints: e.contentTaints, Pointed: pointed}
	if child, _ := p["subagent_session_id"].(string); e.hook == "subagentStop" {
		src.Tool = acs.TruncateStored("subagent "+child, acs.MaxEvidenceBytes)
	}
	if len(e.prov.IDs) > 0 {
		src.ProvenanceID = e.prov.IDs[0]
	}
	for _, t := range texts {
		ix.AddUntrusted(t, src)
	}
	if e.hook != "toolCallResult" || !slices.Contains(tool.Classes, RecordsClass) {
		return
	}
	// The tool returns records: their fields name things (lineage.Named),
	// whether the adapter sent them as an object or a list, or as its
	// JSON or YAML text.
	var fields []string
	parts, _ := p["outputs"].([]any)
	for _, part := range parts {
		m, _ := part.(map[string]any)
		switch v := m["value"].(type) {
		case string:
			ix.AddRecords(v)
		case []any, map[string]any:
			fieldValues(v, &fields)
		}
	}
	ix.AddFields(fields...)
}

// indexUserMessage indexes a userMessage's parts: the user's words as
// trusted, and a part whose provenance says it came from elsewhere — a
// file, a forwarded mail, a pasted page the adapter labels tool_output,
// retrieved, a2a_inbound, external or agent_generated — as untrusted
// content, so that neither its values nor its commands pass for ones the
// user typed. A part without provenance is the user's — except in a
// subagent's session, whose messages are its parent model's words (the
// task it was handed, perhaps a page's command), not a user's; and, unless
// labelled, a file the message attaches (a part of type file: what the
// file says, not what the user typed), and any part in a session a peer
// agent or an external event activated (Session.ActivatedBy) or a turn an
// external event opened (turnStart triggered_by external_event: a
// webhook, a queue message, an incoming mail), where a message is what
// the peer or the event sent.
func (e *evalCtx) indexUserMessage(ix *lineage.Index, p map[string]any) {
	parts, _ := p["content"].([]any)
	// Whom an unlabelled part is from: "" for the user.
	var sender string
	switch {
	case e.sess.Parent != nil:
		sender = "parent " + e.sess.Parent.SessionID
	case e.sess.ActivatedBy != "":
		sender = e.sess.ActivatedBy + " trigger"
	case e.externalEventTurn():
		sender = "external event"
	}
	for _, part := range parts {
		m, _ := part.(map[string]any)
		var texts []string
		scalars(m, &texts)
		prov, _ := m["provenance"].(map[string]any)
		origin, _ := prov["origin"].(string)
		from := sender
		typ, _ := m["type"].(string)
		if from == "" && typ == "file" {
			from = "attached file"
		}
		if e.sess.Parent == nil && (origin == "" && from == "" || origin == "user_input" || origin == "system") {
			for _, t := range texts {
				ix.AddTrusted(t)
			}
			continue
		}
		if holdsUnreadable(m) || typ == "file" && m["provenance"] == nil && byPathAlone(m["value"]) {
			// A file the message attaches, unlabelled, by its path alone
			// (as the native Cursor and Claude Code mappings send it): the
			// model reads what it says and the index never will, as for a
			// tool's unreadable content (updateLineage).
			ix.Unseen = true
		}
		if origin != "" && e.sess.Parent == nil {
			from = "user message part (" + origin + ")"
		}
		id, _ := prov["provenance_id"].(string)
		src := lineage.Source{Seq: e.in.Seq, RequestID: e.in.Req.Params.RequestID, Hook: e.hook,
			Tool: acs.TruncateStored(from, acs.MaxEvidenceBytes), ProvenanceID: id, Taints: e.contentTaints}
		for _, t := range texts {
			ix.AddUntrusted(t, src)
		}
	}
}

// noteActivation records an agentTrigger that activates the session for a
// peer agent or an external event (Session.ActivatedBy; the first one).
func (e *evalCtx) noteActivation() {
	if e.hook != "agentTrigger" || e.sess.ActivatedBy != "" {
		return
	}
	p, _ := e.in.Payload.(map[string]any)
	if t, _ := p["trigger_type"].(string); t == "a2a_inbound" || t == "external_event" {
		e.sess.ActivatedBy = t
	}
}

// externalEventTurn reports whether the envelope's turn was opened by an
// external event.
func (e *evalCtx) externalEventTurn() bool {
	t := e.sess.OpenTurn(e.in.Req.Params.Metadata.TurnID)
	return t != nil && t.TriggeredBy == "external_event"
}

// holdsUnreadable reports whether v holds what a model reads and lineage
// cannot: an image, a recording, a video or a PDF, in the shapes agents
// pass them on — a content block whose type says so and that carries it
// (Anthropic's and MCP's image and audio, Anthropic's document, OpenAI's
// image_url, input_image, input_audio and input_file, ACS userMessage's
// image and audio parts), data or a blob of a MIME type of that kind
// (MCP), a data URI — or encoded data: a run of base64 of a KiB or more
// (a file's contents as an API returns them, which a model can decode),
// or such data an adapter left out (hosthook's note). A record that
// merely names such a file (a listing's mimeType) is not one.
func holdsUnreadable(v any) bool {
	switch x := v.(type) {
	case string:
		return mediaDataURI(x) || strings.Contains(x, encodedDataLeftOut) || strings.Contains(x, outputCutMark) || base64Run(x, minEncodedBytes)
	case []any:
		return slices.ContainsFunc(x, holdsUnreadable)
	case map[string]any:
		if t, _ := x["type"].(string); mediaBlock(t) && hasAny(x, "data", "source", "value", "url", "image_url", "input_audio", "file_data", "file_id", "blob") {
			return true
		}
		for _, k := range []string{"mimeType", "mime_type", "media_type", "mediaType"} {
			if mt, _ := x[k].(string); mediaMIME(mt) && hasAny(x, "data", "blob") {
				return true
			}
		}
		for k, item := range x {
			if k != "provenance" && holdsUnreadable(item) {
				return true
			}
		}
	}
	return false
}

// byPathAlone reports whether a file part's value names the file (a path,
// a URI, a resource: one line) rather than carries what it says.
func byPathAlone(v any) bool {
	s, ok := v.(string)
	return ok && !strings.ContainsAny(s, "\n\r")
}

// encodedDataLeftOut ends the note LeftOut writes, outputCutMark begins
// the one CutShort writes; minEncodedBytes is the run of base64 taken for
// encoded data rather than text (hosthook's blobBytes).
const (
	encodedDataLeftOut = "bytes of encoded data left out]"
	outputCutMark      = "…[turnguard: cut at "
	minEncodedBytes    = 1 << 10
)

// CutShort is the note an adapter puts where it cut an output at cut of
// total bytes: what followed is read by the model, not by lineage, which
// marks the content as holding what lineage cannot read
// (holdsUnreadable).
func CutShort(cut, total int) string {
	return " " + outputCutMark + strconv.Itoa(cut) + " of " + strconv.Itoa(total) + " bytes]"
}

// LeftOut is the note an adapter puts where it shortened n bytes of
// encoded data (an image's base64), which marks the content as holding
// what lineage cannot read (holdsUnreadable).
func LeftOut(n int) string {
	return "…[turnguard: " + strconv.Itoa(n) + " " + encodedDataLeftOut
}

// base64Run reports whether s holds n or more base64 characters in a row
// with a letter beyond hex among them, the line breaks of wrapped base64
// (after lines of 60 or more) not counting as a break: not a list of
// hashes or ids, one a line, nor of words.
func base64Run(s string, n int) bool {
	if len(s) < n {
		return false
	}
	run, line, nonHex := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=', c == '-', c == '_':
			run++
			line++
			nonHex = nonHex || c > 'f' && c <= 'z' || c > 'F' && c <= 'Z'
			if run >= n && nonHex {
				return true
			}
		case (c == '\n' || c == '\r') && line >= 60:
			line = 0
		case c == '\r' && i+1 < len(s) && s[i+1] == '\n':
		default:
			run, line, nonHex = 0, 0, false
		}
	}
	return false
}

func hasAny(m map[string]any, keys ...string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { _, ok := m[k]; return ok })
}

func mediaBlock(t string) bool {
	switch strings.ToLower(t) {
	case "image", "audio", "video", "document", "image_url", "input_image", "input_audio", "input_file":
		return true
	}
	return false
}

func mediaMIME(mt string) bool {
	mt = strings.ToLower(mt)
	return strings.HasPrefix(mt, "image/") || strings.HasPrefix(mt, "audio/") || strings.HasPrefix(mt, "video/") || strings.HasPrefix(mt, "application/pdf")
}

func mediaDataURI(s string) bool {
	const scheme = "data:"
	return len(s) > len(scheme) && strings.EqualFold(s[:len(scheme)], scheme) && mediaMIME(s[len(scheme):])
}

// fieldValues appends every scalar under v and every key of its objects.
func fieldValues(v any, out *[]string) {
	switch x := v.(type) {
	case []any:
		for _, item := range x {
			fieldValues(item, out)
		}
	case map[string]any:
		for k, item := range x {
			*out = append(*out, k)
			fieldValues(item, out)
		}
	default:
		scalars(x, out)
	}
}

// scalars appends every string and number under v (a payload member:
// parts with a value, lists of them, objects), in order.
func scalars(v any, out *[]string) {
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case json.Number:
		*out = append(*out, string(x))
	case float64:
		*out = append(*out, strconv.FormatFloat(x, 'f', -1, 64))
	case []any:
		for _, item := range x {
			scalars(item, out)
		}
	case map[string]any:
		// A part's value, or an object's members in key order.
		if val, ok := x["value"]; ok {
			scalars(val, out)
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			if k != "provenance" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			scalars(x[k], out)
		}
	}
}

// argumentTexts is the texts of each argument a toolCallRequest's payload
// carries: the scalars of its value as sent (a number as written, not as
// a float reads it back).
func argumentTexts(payload any) map[string][]string {
	p, _ := payload.(map[string]any)
	args, _ := p["arguments"].(map[string]any)
	out := make(map[string][]string, len(args))
	for name, v := range args {
		if a, ok := v.(map[string]any); ok {
			var texts []string
			scalars(a["value"], &texts)
			out[name] = texts
		}
	}
	// The payload's raw_command is the argument of that name (a sink of
	// the shells), so lineage["raw_command"] exists wherever tool.sinks
	// names it.
	if raw, _ := p["raw_command"].(string); raw != "" {
		out["raw_command"] = append(out["raw_command"], raw)
	}
	return out
}

// lineageViews traces each argument of a toolCallRequest; empty for any
// other hook, or a session that indexed nothing.
func (e *evalCtx) lineageViews() map[string]LineageView {
	if e.lineage != nil {
		return e.lineage
	}
	e.lineage = map[string]LineageView{}
	if e.hook != "toolCallRequest" {
		return e.lineage
	}
	ix := e.sess.Lineage
	if ix == nil {
		ix = &lineage.Index{}
	}
	p, _ := e.in.Payload.(map[string]any)
	args, _ := p["arguments"].(map[string]any)
	for name, texts := range e.argumentTexts() {
		l := ix.Classify(texts...)
		if !l.Remote && (l.Origin == lineage.FromUntrusted || ix.Full) {
			l = ix.Dialed(l, commandHosts(name, args[name], p))
		}
		view := LineageView{Origin: string(l.Origin), Tokens: l.Tokens, Unknown: l.Unknown, Named: l.Named, Typed: l.Typed, Evidence: string(l.Evidence), Remote: l.Remote,
			Pointed: l.Pointed, RequestIDs: []string{}, Tools: []string{}, ProvenanceIDs: []string{}, Mentions: []string{}}
		if ids, untrusted := e.declaredLineage(args[name]); untrusted {
			// The adapter says the value derives from untrusted content
			// (its provenance's origin, or derived_from naming such
			// content or content the session never saw): that stands,
			// whatever the tokens say (fail closed).
			if view.Origin != string(lineage.FromUntrusted) {
				view.Origin, view.Evidence, view.Named = string(lineage.FromUntrusted), string(lineage.Declared), false
			}
			view.Typed, view.Pointed = false, false
			for _, id := range ids {
				if !slices.Contains(view.ProvenanceIDs, id) {
					view.ProvenanceIDs = append(view.ProvenanceIDs, id)
				}
			}
		}
		if view.Tokens == nil {
			view.Tokens = []string{}
		}
		if l.Unknown {
			// Nothing to cite but the calls whose output the session has
			// not seen yet (none when the index is full).
			view.RequestIDs = append(view.RequestIDs, ix.Missing()...)
		}
		for _, i := range l.Sources {
			s := ix.Sources[i]
			view.RequestIDs = append(view.RequestIDs, s.RequestID)
			if s.Tool != "" && !slices.Contains(view.Tools, s.Tool) {
				view.Tools = append(view.Tools, s.Tool)
			}
			if s.ProvenanceID != "" {
				view.ProvenanceIDs = append(view.ProvenanceIDs, s.ProvenanceID)
			}
		}
		e.lineage[name] = view
	}
	e.noteMentions()
	return e.lineage
}

// argumentTexts is argumentTexts of the envelope's payload, read once for
// lineage and pointing.
func (e *evalCtx) argumentTexts() map[string][]string {
	if e.argTexts == nil {
		e.argTexts = argumentTexts(e.in.Payload)
	}
	return e.argTexts
}

// noteMentions fills each untrusted argument's Mentions: the call's other
// sinks, the user's own, whose words it holds in order.
func (e *evalCtx) noteMentions() {
	texts, sinks := e.argumentTexts(), e.toolView().Sinks
	for a, va := range e.lineage {
		if va.Origin != string(lineage.FromUntrusted) {
			continue
		}
		for _, b := range sinks {
			if vb, ok := e.lineage[b]; ok && b != a && vb.Origin == string(lineage.FromUser) && lineage.HoldsWords(texts[a], texts[b]) {
				va.Mentions = append(va.Mentions, b)
			}
		}
		slices.Sort(va.Mentions)
		e.lineage[a] = va
	}
}

// pointsAtSource reports whether a toolCallRequest names, in every
// argument, a source the user typed: a place — their URL, their path —
// they wrote in their own words (lineage.Index.TypedPlace). Not their
// words: a search for the name they gave ("Dora Keller email") or a
// folder they named ("inbox") selects whatever ranks for it or was mailed
// there. Not a URL they only approved a call reaching, or one a trusted
// source gave: an approval says the call may run, not where to look.
// Nor an argument the adapter declares derived from untrusted content.
//
// Nor a call whose output is what many wrote under or about the place:
// a tool that lists records (a channel, an inbox: the user naming the
// channel does not vouch for whoever posted in it), a folder's files'
// names (lists_names: whoever sent a file named it), the lines of the
// files under a path (searches), or a search for terms (searchArgs:
// WebSearch(query="www.dora.example") gives whatever ranks for the
// user's URL, not their page).
func (e *evalCtx) pointsAtSource() bool {
	if slices.ContainsFunc(e.toolView().Classes, func(c string) bool {
		return c == RecordsClass || c == classListsNames || c == classSearches
	}) {
		return false
	}
	texts := e.argumentTexts()
	if len(texts) == 0 || e.sess.Lineage == nil {
		return false
	}
	p, _ := e.in.Payload.(map[string]any)
	args, _ := p["arguments"].(map[string]any)
	for name, ts := range texts {
		if len(ts) == 0 || slices.Contains(searchArgs, normalize(name, false)) {
			return false
		}
		if _, untrusted := e.declaredLineage(args[name]); untrusted {
			return false
		}
		for _, t := range ts {
			if !e.sess.Lineage.TypedPlace(t) {
				return false
			}
		}
	}
	return true
}

// searchArgs name the terms a call searches for (normalize'd): what it
// returns is whatever matches them, written by anyone.
var searchArgs = []string{"query", "q", "search", "search_term", "search_query", "search_terms", "keywords", "terms"}

// commandHosts are the hosts a command argument gives a program that
// connects to them (shellcmd.Hosts: curl get.evil.example, ssh HOST, nc
// HOST PORT, scp f HOST:path); none for an argument whose name is not a
// command line's (commandArgs: the payload's raw_command is one).
func commandHosts(name string, arg any, payload map[string]any) []string {
	if !slices.Contains(commandArgs, normalize(name, false)) {
		return nil
	}
	var hosts []string
	if raw, _ := payload["raw_command"].(string); name == "raw_command" && raw != "" {
		hosts = shellcmd.Hosts(raw)
	}
	a, _ := arg.(map[string]any)
	switch v := a["value"].(type) {
	case string:
		hosts = append(hosts, shellcmd.Hosts(v)...)
	case []any:
		words := make([]string, 0, len(v))
		for _, w := range v {
			if s, ok := w.(string); ok {
				words = append(words, s)
			}
		}
		if len(words) == len(v) {
			hosts = append(hosts, shellcmd.ArgvHosts(words)...)
		}
	}
	return hosts
}

// declaredLineage reads the ACS provenance an adapter attached to an
// argument: untrusted when its origin is, or when it is agent_generated
// and derived_from names content that was untrusted or that the session
// never saw (ACS §7.2 monotonicity, as for the envelope's provenance);
// ids are the untrusted or unknown ids it names.
func (e *evalCtx) declaredLineage(arg any) (ids []string, untrusted bool) {
	for _, p := range acs.ProvenanceOf(arg) {
		if untrustedOrigin(p.Origin) {
			untrusted = true
			if p.ProvenanceID != "" {
				ids = append(ids, p.ProvenanceID)
			}
			continue
		}
		if p.Origin != "agent_generated" {
			continue
		}
		for _, id := range p.DerivedFrom {
			u, known := false, false
			if e.sess.Provenance != nil {
				u, known = e.sess.Provenance.Lookup(id)
			}
			if u || !known {
				untrusted = true
				ids = append(ids, id)
			}
		}
	}
	return ids, untrusted
}

// lineageData is lineageViews for message templates.
func (e *evalCtx) lineageData() map[string]any {
	out := map[string]any{}
	for name, v := range e.lineageViews() {
		out[name] = map[string]any{"origin": v.Origin, "request_ids": v.RequestIDs, "tools": v.Tools,
			"provenance_ids": v.ProvenanceIDs, "tokens": v.Tokens, "unknown": v.Unknown,
			"named": v.Named, "typed": v.Typed, "evidence": v.Evidence, "remote": v.Remote, "pointed": v.Pointed, "mentions": v.Mentions}
	}
	return out
}

// ownValues remembers, under a rule set whose conditions read lineage
// (texts from callTexts), the tokens that matter of a toolCallRequest's
// arguments that the session had not seen: the model wrote them first
// (lineage.Index.Carry), so the call's own output, which echoes them —
// the event it created, the booking it confirms — does not trace them to
// itself. Called once the call is decided, so the call itself was traced
// as it came. A session gets an index only once there is something to
// keep.
func (s *Set) ownValues(sess *turnstate.Session, requestID string, texts []string) {
	if len(texts) == 0 {
		return
	}
	ix := sess.Lineage
	if ix == nil {
		ix = &lineage.Index{}
	}
	if ix.Carry(requestID, texts...) {
		sess.Lineage = ix
	}
}

// asked remembers a toolCallRequest the decision answered ask, under a
// rule set whose conditions read lineage (texts from callTexts): when its result arrives — the
// human let it run — its argument values are trusted for the rest of the
// session (updateLineage), so the same value is not asked about again.
func (s *Set) asked(sess *turnstate.Session, requestID string, texts []string) {
	sessionIndex(sess).Ask(requestID, texts)
}

// sessionIndex is the session's lineage index, made empty the first time
// something is recorded in it.
func sessionIndex(sess *turnstate.Session) *lineage.Index {
	if sess.Lineage == nil {
		sess.Lineage = &lineage.Index{}
	}
	return sess.Lineage
}

// sinkTexts returns the texts of a toolCallRequest's sinks in name order
// (every argument of a tool whose sinks the catalog does not know).
func (s *Set) sinkTexts(payload any) []string {
	p, _ := payload.(map[string]any)
	tool, _ := p["tool"].(map[string]any)
	name, _ := tool["name"].(string)
	capability, _ := p["capability"].(string)
	args := argumentTexts(payload)
	names := slices.Sorted(maps.Keys(args))
	sinks, _ := s.ToolSinks(name, capability, names...)
	var texts []string
	for _, n := range sinks {
		texts = append(texts, args[n]...)
	}
	return texts
}

// callTexts returns the texts of a toolCallRequest's arguments in name
// order, under a rule set whose conditions read lineage; ok is false on
// any other envelope or rule set.
func (s *Set) callTexts(spec acs.MethodSpec, payload any) (texts []string, ok bool) {
	if !s.usesLineage || ruleHook(spec) != "toolCallRequest" {
		return nil, false
	}
	args := argumentTexts(payload)
	for _, name := range slices.Sorted(maps.Keys(args)) {
		texts = append(texts, args[name]...)
	}
	return texts, true
}

// resumed reports whether a sessionStart's payload says the host resumed a
// conversation (platform_context.source "resume", as the native Claude
// Code mapping and its ACS adapter carry SessionStart's source).
func resumed(payload any) bool {
	p, _ := payload.(map[string]any)
	ctx, _ := p["platform_context"].(map[string]any)
	return ctx["source"] == "resume"
}
