package lineage

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Fields: an output that is a structure — a JSON or YAML object or list,
// as most tools and MCP servers return — names things in its fields: a
// channel in a channel list, a user, an account of record, an event's
// participants. An argument whose whole value is one such field (not a
// part of one: an injected instruction lives inside a field's text) is a
// reference to something the output listed. Lineage still traces it to
// that output; Lineage.Named says so, and a rule may ask about such a
// value less readily than about one lifted from the middle of a page.
const (
	// MaxFields is the number of distinct field values kept; later ones
	// are not (a value then is not Named: fail closed).
	MaxFields = 2048
	// maxFieldRunes and maxFieldWords bound a field value kept: a name,
	// an address, an identifier, not a paragraph.
	maxFieldRunes = 96
	maxFieldWords = maxShortWords
	// maxStructuredBytes bounds an output parsed for fields.
	maxStructuredBytes = 16 << 10
)

// fieldHash is the hash of a whole value as a field is compared: lower
// case, runs of white space as one space, without the quotes and
// punctuation around it. ok is false for a value with nothing to compare
// or too long to be a field.
func fieldHash(s string) (uint64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) && r != '@' && r != '/' })
	if s == "" || utf8.RuneCountInString(s) > maxFieldRunes {
		return 0, false
	}
	words := strings.Fields(normal(s))
	if len(words) > maxFieldWords {
		return 0, false
	}
	return hashOf("\x00field " + strings.Join(words, " ")), true
}

// structuredFields returns the hashes of the field values of text when it
// is a JSON or YAML object or list (keys of objects included: a map from
// a name to its details names that thing), sorted and distinct; nil for
// any other text.
func structuredFields(text string) []uint64 {
	if len(text) > maxStructuredBytes || !looksStructured(text) {
		return nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(text), &root); err != nil || len(root.Content) != 1 {
		return nil
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode && doc.Kind != yaml.SequenceNode {
		return nil
	}
	var hs []uint64
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.ScalarNode:
			if h, ok := fieldHash(n.Value); ok {
				hs = append(hs, h)
			}
		case yaml.MappingNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c)
			}
		}
	}
	walk(doc)
	slices.Sort(hs)
	return slices.Compact(hs)
}

// looksStructured is a cheap test before a parse: a JSON object or list,
// or a YAML document whose first line is a key or a list item.
func looksStructured(text string) bool {
	t := strings.TrimLeftFunc(text, unicode.IsSpace)
	if t == "" {
		return false
	}
	if t[0] == '{' || t[0] == '[' {
		return true
	}
	line, _, _ := strings.Cut(t, "\n")
	if strings.HasPrefix(line, "- ") || line == "-" {
		return true
	}
	key, _, ok := strings.Cut(line, ":")
	return ok && key != "" && !strings.ContainsAny(key, "\t")
}

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
func typedHash(s string) (uint64, bool) {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" || utf8.RuneCountInString(s) > maxTypedRunes {
		return 0, false
	}
	return hashOf("\x00typed " + s), true
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
