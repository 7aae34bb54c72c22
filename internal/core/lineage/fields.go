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
// punctuation around it — and its letters as written (normalExact), not
// folded: a mail's "ann@pаrtner.example" with a Cyrillic "а", another
// address, is not the listing's ann@partner.example. ok is false for a
// value with nothing to compare or too long to be a field.
func fieldHash(s string) (uint64, bool) {
	s = strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) && r != '@' && r != '/' })
	if s == "" || utf8.RuneCountInString(s) > maxFieldRunes {
		return 0, false
	}
	words := strings.Fields(normalExact(s))
	if len(words) > maxFieldWords {
		return 0, false
	}
	return hashOf("\x00field " + strings.Join(words, " ")), true
}

// namesFields reports whether s is, whole, a field of an untrusted
// structured output — or a list of them written as one text, each item
// whole ("a@example.com, b@example.com", as a mail's recipients are often
// passed): each names a thing the output listed, as the elements of a
// list argument do.
func (ix *Index) namesFields(s string) bool {
	if h, ok := fieldHash(s); ok && ix.isField(h) {
		return true
	}
	if ix.fillsTemplate(s) {
		return true
	}
	n := 0
	for it := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ',' || r == ';' }) {
		if strings.TrimSpace(it) == "" {
			continue
		}
		if h, ok := fieldHash(it); !ok || !ix.isField(h) {
			return false
		}
		n++
	}
	return n >= 2
}

// maxTemplateWords bounds the values fillsTemplate reads.
const maxTemplateWords = 16

// fillsTemplate reports whether s is the user's words around one whole
// field: "Booking hotel Montmartre Suites" after the user asked for an
// event called "Booking hotel {hotel_name}" and a listing gave the hotel.
func (ix *Index) fillsTemplate(s string) bool {
	if len(s) > maxFieldRunes*4 {
		return false // a text, not a name in the user's words
	}
	ws := strings.Fields(s)
	if len(ws) < 2 || len(ws) > maxTemplateWords {
		return false
	}
	var whole []uint64 // the value's tokens, read once a field is found
	for i := range ws {
		for j := i + 1; j <= len(ws) && j-i <= maxFieldWords; j++ {
			if i == 0 && j == len(ws) {
				continue // the whole value: fieldHash's
			}
			field := strings.Join(ws[i:j], " ")
			if h, ok := fieldHash(field); !ok || !ix.isField(h) {
				continue
			}
			rest := strings.Join(slices.Concat(ws[:i], ws[j:]), " ")
			if o := ix.classifyText(rest).Origin; o != FromUser {
				continue
			}
			// A token of the value that is neither the field's nor the
			// rest's runs across where they meet: a number written in
			// groups, the user's "4455 6677" going on into a listing's
			// count "12" — the account 4455667712, which a mail wrote —
			// or joined around a field taken from its middle.
			if whole == nil {
				whole = valueTokens(s)
			}
			parts := slices.Concat(valueTokens(field), valueTokens(rest))
			slices.Sort(parts)
			if !slices.ContainsFunc(whole, func(h uint64) bool { _, ok := slices.BinarySearch(parts, h); return !ok }) {
				return true
			}
		}
	}
	return false
}

// valueTokens returns the hashes of the tokens of s (not its pairs of
// words), as classifyText cuts it, sorted and distinct.
func valueTokens(s string) []uint64 {
	var hs []uint64
	each(normal(s), func(_ string, h uint64, k kind) {
		if k != pair {
			hs = append(hs, h)
		}
	})
	slices.Sort(hs)
	return slices.Compact(hs)
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
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				walk(k)
				if k.Kind == yaml.ScalarNode && freeText(k.Value) && v.Kind != yaml.MappingNode {
					// What a message, a mail or a file says is its
					// author's words, whole or not: a message that is
					// nothing but an account names nothing.
					continue
				}
				walk(v)
			}
		}
	}
	walk(doc)
	slices.Sort(hs)
	return slices.Compact(hs)
}

// freeTextKeys are the names of fields that hold what a record says — a
// message's body, a mail's subject, a file's content, an event's
// description — rather than what it is called: their values, written by
// whoever wrote the record, name nothing (compared without case, '_' and
// '-').
var freeTextKeys = map[string]bool{
	"body": true, "htmlbody": true, "textbody": true, "bodytext": true, "subject": true, "content": true,
	"filecontent": true, "text": true, "description": true, "message": true, "summary": true, "notes": true,
	"note": true, "comment": true, "comments": true, "snippet": true, "caption": true, "bio": true, "about": true, "title": true,
	// A body given as an object ({html: …, plain: …}: a mail's parts) is
	// walked, its parts are what the mail says.
	"html": true, "plain": true, "plaintext": true, "markdown": true, "text/html": true, "text/plain": true,
	// What anyone may write about the thing: a review of a hotel, a
	// payment's memo, a message's preview.
	"review": true, "reviews": true, "memo": true, "preview": true,
}

func freeText(key string) bool {
	if len(key) > 32 {
		return false
	}
	k := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, key)
	return freeTextKeys[k]
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
