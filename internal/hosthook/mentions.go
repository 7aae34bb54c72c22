package hosthook

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// claudeMentions are the files and resources a Claude Code prompt names
// with @ (`@src/auth.js`, `@"docs/my notes.md"`, `@~/Downloads/spec.md`,
// an MCP server's resource `@github:repos/acme/app/issues/7`), as ACS file
// parts of the userMessage, their value the path (resolved against cwd)
// or the resource. Claude Code puts what a mentioned file says into the
// model's context without a hook; the prompt carries only its name. A
// file inside cwd, the project, is the user's own (provenance user_input,
// as a Read of it); one from elsewhere — a download, another folder, a
// path through ~ the hook cannot resolve — and a server's resource carry
// no label, so the default pack's attached-file source takes what they
// say for content, not the user's words (as Cursor's attachments).
//
// A mention starts at an @ at the prompt's start or after white space
// (an address, dev@example.com, is none) and runs to the next white space,
// or, quoted, to the closing quote; trailing punctuation (`@README.md.`)
// is not part of it.
func claudeMentions(prompt, cwd string, newID func() string) []any {
	root := ""
	if strings.HasPrefix(cwd, "/") || isDrivePath(cwd) {
		root = slashed(cwd)
	}
	var parts []any
	for i := 0; i < len(prompt); {
		at := strings.IndexByte(prompt[i:], '@')
		if at < 0 {
			break
		}
		at += i
		i = at + 1
		if at > 0 {
			if r, _ := utf8.DecodeLastRuneInString(prompt[:at]); !unicode.IsSpace(r) {
				continue
			}
		}
		mention, next := mentionAt(prompt[at+1:])
		i = at + 1 + next
		if mention == "" || len(mention) > maxAttachmentBytes {
			continue
		}
		if len(parts) == maxAttachments {
			// The rest are not listed; unlabelled, they count as content
			// (fail closed).
			parts[len(parts)-1] = map[string]any{"type": "file", "value": "(more mentions)"}
			continue
		}
		parts = append(parts, mentionPart(mention, root, newID))
	}
	return parts
}

// mentionAt reads the mention at the start of s (after its @): quoted, to
// the closing quote; else to the next white space, without trailing
// punctuation. It returns the mention and how many bytes of s it read.
func mentionAt(s string) (string, int) {
	if strings.HasPrefix(s, `"`) {
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			return "", len(s)
		}
		return s[1 : 1+end], end + 2
	}
	end := strings.IndexFunc(s, unicode.IsSpace)
	if end < 0 {
		end = len(s)
	}
	return strings.TrimRight(s[:end], `.,;:!?)]}'"`), end
}

// mentionPart is the file part a mention stands for.
func mentionPart(mention, root string, newID func() string) map[string]any {
	if resourceMention(mention) {
		return map[string]any{"type": "file", "value": mention}
	}
	p := mention
	switch {
	case strings.HasPrefix(p, "/") || isDrivePath(p):
		p = slashed(p)
	case strings.HasPrefix(p, "~") || root == "":
		// A home the hook does not know, or no project to resolve it in:
		// not known to be the user's own.
		return map[string]any{"type": "file", "value": mention}
	default:
		p = slashed(root + "/" + p)
	}
	part := map[string]any{"type": "file", "value": p}
	if root != "" && under(p, root) {
		part["provenance"] = userInput(newID)
	}
	return part
}

// resourceMention reports whether a mention names an MCP server's
// resource (`server:uri`) rather than a path: a name before a colon that
// is not a Windows drive.
func resourceMention(m string) bool {
	colon := strings.IndexByte(m, ':')
	if colon <= 0 || isDrivePath(m) {
		return false
	}
	return !strings.ContainsAny(m[:colon], `/\`)
}

// isDrivePath reports whether p starts with a Windows drive (C:\, C:/).
func isDrivePath(p string) bool {
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') &&
		(p[0] >= 'A' && p[0] <= 'Z' || p[0] >= 'a' && p[0] <= 'z')
}
