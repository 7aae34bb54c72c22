package shellcmd

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// MaxGlobWords bounds the words GlobWords returns.
const MaxGlobWords = 64

// GlobWords returns the words of a command line a shell expands as globs:
// those with *, ? or [ outside quotes (cat */README.md, rm *.log), quotes
// taken out — not a quoted pattern a program reads itself (rg -g
// '**/*.go', git commit -m 'ignore */dist'), nor a here-document's text.
// A shell's -c script is read as a line. A line the parser refuses, or one
// too long to read, gives every word with a glob character in it (fail
// closed). At most MaxGlobWords, in the line's order.
func GlobWords(line string) []string {
	var g globWords
	g.line(line, 0)
	return g.words
}

// ArgvGlobWords is GlobWords of an argument vector: only a shell's -c
// script is expanded by a shell (["bash", "-lc", "cat */x"]).
func ArgvGlobWords(argv []string) []string {
	var g globWords
	if len(argv) >= 3 && systemShell(argv[0]) && shellScriptOption(argv[1]) {
		g.line(argv[2], 1)
	}
	return g.words
}

type globWords struct {
	words []string
}

func (g *globWords) add(w string) {
	if len(g.words) < MaxGlobWords {
		g.words = append(g.words, w)
	}
}

func (g *globWords) line(line string, depth int) {
	if depth > maxDepth || len(line) > MaxParsed {
		g.fallback(line)
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		g.fallback(line)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		var argv []string
		for _, a := range c.Args {
			v, lit := literal(a)
			argv = append(argv, v)
			if lit && unquotedGlob(a) {
				g.add(v)
			}
		}
		if len(argv) >= 3 && systemShell(argv[0]) && shellScriptOption(argv[1]) {
			g.line(argv[2], depth+1)
		}
		return true
	})
}

// fallback is the reading of a line the parser refused: every word with
// a glob character.
func (g *globWords) fallback(line string) {
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\r\n;&|()<>`\"'=,", r) }) {
		if strings.ContainsAny(w, "*?[") {
			g.add(w)
		}
	}
}

// unquotedGlob reports whether a word has a glob character outside
// quotes, not escaped.
func unquotedGlob(w *syntax.Word) bool {
	for _, part := range w.Parts {
		l, ok := part.(*syntax.Lit)
		if !ok {
			continue
		}
		for i := 0; i < len(l.Value); i++ {
			switch l.Value[i] {
			case '\\':
				i++
			case '*', '?', '[':
				return true
			}
		}
	}
	return false
}
