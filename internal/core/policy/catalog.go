package policy

import (
	"path"
	"slices"
	"strings"
	"unicode"
)

// The tool catalog: which classes a tool call has, and which of its
// arguments are sinks, by the globs of the rule files' tools section
// matched against its name, capability and argument names in one normal
// form, and by the verbs of its name.

// ToolClasses returns the catalog's classes of a tool call, by name, by
// capability, by the names of the arguments it carries and by the verbs of
// its name, sorted and without duplicates. Names, capabilities and argument
// names match the catalog's globs in the normal form of catalogKey.
func (s *Set) ToolClasses(name, capability string, args ...string) []string {
	classes, _, _ := s.lookup(name, capability, args, false, nil)
	return classes
}

// ToolSinks returns the arguments of a tool call, of those it carries
// (args, as the call spells them), that carry data or authority out of
// the session: those whose names match a sink glob of a catalog entry
// that matches the call. known reports whether some matching entry
// declares sinks. When none does, the catalog does not know where the
// call's data goes, so every argument it carries is a sink (fail closed):
// sinks is args itself. Entries match as for ToolClasses.
func (s *Set) ToolSinks(name, capability string, args ...string) (sinks []string, known bool) {
	_, sinks, known = s.lookup(name, capability, args, true, nil)
	return sinks, known
}

// lookup matches a call against the catalog once, for its classes and,
// if withSinks, its sinks (see ToolSinks), appended to dst[:0] when they
// are known. dst may be args itself (a caller that owns args saves an
// allocation): the sinks are a subsequence of args, so each is written
// at or before where it is read.
func (s *Set) lookup(name, capability string, args []string, withSinks bool, dst []string) (classes, sinks []string, known bool) {
	classes = []string{}
	key, capability := catalogKey(name), catalogKey(capability)
	argKeys, argsDone := []string(nil), false
	keys := func() []string {
		if !argsDone {
			argKeys, argsDone = args, true
			if slices.ContainsFunc(args, func(a string) bool { return !isCatalogKey(a) }) {
				argKeys = make([]string, 0, len(args))
				for _, a := range args {
					argKeys = append(argKeys, catalogKey(a))
				}
			}
		}
		return argKeys
	}
	verbs, verbsDone := []string(nil), false
	// isSink[i]: args[i] matched a sink glob; set up on the first
	// matching entry that declares sinks, on the stack for most calls.
	var isSinkBuf [16]bool
	var isSink []bool
	for _, tc := range s.tools {
		nameOK := tc.match == "" || key != "" && strings.HasPrefix(key, tc.matchPrefix) && globMatch(tc.match, key)
		capOK := tc.capability == "" || capability != "" && strings.HasPrefix(capability, tc.capPrefix) && globMatch(tc.capability, capability)
		if !nameOK || !capOK {
			continue
		}
		if tc.args != nil && !anyArgMatches(tc.args, keys()) {
			continue
		}
		if tc.verbs != nil {
			if !verbsDone {
				verbs, verbsDone = verbsOf(name), true
			}
			if !slices.ContainsFunc(verbs, func(w string) bool { return slices.Contains(tc.verbs, w) }) {
				continue
			}
		}
		classes = append(classes, tc.classes...)
		if withSinks && tc.sinks != nil {
			known = true
			if isSink == nil {
				if len(args) <= len(isSinkBuf) {
					isSink = isSinkBuf[:len(args)]
				} else {
					isSink = make([]bool, len(args))
				}
			}
			for i, a := range keys() {
				isSink[i] = isSink[i] || a != "" && slices.ContainsFunc(tc.sinks, func(g string) bool { return globMatch(g, a) })
			}
		}
	}
	slices.Sort(classes)
	classes = slices.Compact(classes)
	if !withSinks {
		return classes, nil, false
	}
	if !known {
		return classes, args, false
	}
	sinks = dst[:0]
	for i, a := range args {
		if isSink[i] {
			sinks = append(sinks, a)
		}
	}
	if sinks == nil {
		sinks = []string{}
	}
	return classes, sinks, true
}

func anyArgMatches(globs, args []string) bool {
	for _, a := range args {
		if a == "" {
			continue
		}
		for _, g := range globs {
			if globMatch(g, a) {
				return true
			}
		}
	}
	return false
}

// verbsOf returns the words of a tool name in verb position, in catalog
// form. Tool names are imperative: each clause starts with its verb
// ("get_and_merge_pull_request" is "get", then "and merge …"), while the
// same word further inside a clause names a thing ("get_merge_request",
// "get_workflow_run", "list_commits"). So the words in verb position are
// the first word of the tool's own name — after the last "__", which
// separates an MCP tool's server from its name (mcp__<server>__<tool>) —
// and every word after a conjunction (and, or, then). A host that spells
// the server apart otherwise (Cursor's MCP:<tool>, mcp.<server>.<tool>)
// names the tool after its last ':' or '.'.
func verbsOf(name string) []string {
	if i := strings.LastIndex(name, "__"); i >= 0 {
		name = name[i+2:]
	} else if k := catalogKey(name); strings.HasPrefix(k, "mcp_") {
		if i := strings.LastIndexAny(name, ":."); i >= 0 {
			name = name[i+1:]
		}
	}
	var verbs []string
	clauseStart := true
	for w := range strings.SplitSeq(catalogKey(name), "_") {
		if w == "" {
			continue
		}
		if clauseStart {
			verbs = append(verbs, w)
		}
		switch w {
		case "and", "or", "then":
			clauseStart = true
		default:
			clauseStart = false
		}
	}
	return verbs
}

// catalogKey is the form in which tool names and capabilities are
// compared with the catalog's globs (see catalogGlob for the globs).
// Frameworks spell the same tool differently — Claude Code's "Bash" and
// "WebFetch", Cursor's "Shell", snake_case "web_fetch", an MCP server's
// "mcp__shell__exec", a capability "Process.Execute" or "process-execute",
// an adapter's stray "Bash " — and a catalog that misses one of those
// spellings fails open: the call is not consequential, so no taint guard
// stops it. So only the words of a name decide a match, not how they are
// written:
//
//   - surrounding whitespace is dropped and letters are lower-cased;
//   - a word boundary inside camelCase ("webFetch", "HTTPRequest") becomes
//     a separator: a capital after a lower-case letter or digit, or a
//     capital followed by a lower-case letter after another capital;
//   - each run of separators — '_', '-', '.', '/', ':' and whitespace —
//     becomes one '_', and separators at either end are dropped.
//
// "WebFetch", "web_fetch", "web-fetch", "WEB_FETCH" and "web.fetch" are
// all "web_fetch"; "Process.Execute" is "process_execute"; "exec/run" is
// "exec_run". A name never keeps a '/', so a glob's '*' matches across
// what was one.
func catalogKey(s string) string {
	if isCatalogKey(s) {
		return s // already in normal form: no copy
	}
	return normalize(s, false)
}

// isCatalogKey reports whether s is already in catalogKey's form with
// only lower-case ASCII letters, digits and single inner '_'.
func isCatalogKey(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
		case c == '_' && i > 0 && i < len(s)-1 && s[i-1] != '_':
		default:
			return false
		}
	}
	return true
}

// catalogGlob is a catalog glob in the form catalogKey gives names, so
// that a glob matches every spelling of the names it was written for.
// Inside a bracket expression and after a backslash the glob is only
// lower-cased: those characters are pattern syntax, not words ("[a-z]").
func catalogGlob(s string) string { return normalize(s, true) }

func normalize(s string, glob bool) string {
	rs := []rune(strings.TrimSpace(s))
	var b strings.Builder
	b.Grow(len(s) + 4)
	sep := false     // a separator is pending
	inClass := false // inside [...]
	var prev rune    // the previous rune of a word, 0 after a separator
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if glob && (inClass || r == '\\') {
			if sep && b.Len() > 0 {
				b.WriteByte('_')
			}
			sep = false
			if r == '\\' && i+1 < len(rs) {
				b.WriteRune(r)
				i++
				r = rs[i]
			} else if r == ']' {
				inClass = false
			}
			b.WriteRune(unicode.ToLower(r))
			prev = 0
			continue
		}
		if isSeparator(r) {
			sep, prev = true, 0
			continue
		}
		if glob && r == '[' {
			inClass = true
		}
		if unicode.IsUpper(r) && prev != 0 {
			lowerNext := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && lowerNext {
				sep = true
			}
		}
		if sep && b.Len() > 0 {
			b.WriteByte('_')
		}
		sep = false
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}

func isSeparator(r rune) bool {
	switch r {
	case '_', '-', '.', '/', ':':
		return true
	}
	return unicode.IsSpace(r)
}

// literalPrefix is the part of a glob before its first special character,
// which every string the glob matches starts with.
func literalPrefix(pattern string) string {
	if i := strings.IndexAny(pattern, `*?[\`); i >= 0 {
		return pattern[:i]
	}
	return pattern
}

func globMatch(pattern, s string) bool {
	// The catalog's globs are nearly all a literal name or a literal
	// prefix and a final '*'; every envelope tries all of them, so those
	// two shapes are matched directly, exactly as path.Match would.
	if i := strings.IndexAny(pattern, `*?[\`); i < 0 {
		return pattern == s
	} else if i == len(pattern)-1 && pattern[i] == '*' {
		return strings.HasPrefix(s, pattern[:i]) && !strings.Contains(s[i:], "/")
	}
	ok, _ := path.Match(pattern, s)
	return ok
}
