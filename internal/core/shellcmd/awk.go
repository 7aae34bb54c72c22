package shellcmd

import "strings"

// awk runs commands of its own: system("cmd"), "cmd" | getline, print …
// | "cmd" (and gawk's |&), and gawk's indirect call @f("cmd") runs
// whatever function f names, system too (Unknown). The command is a string the program builds;
// one that begins with a string literal names its program there, as a
// shell word does (system("curl " url) runs curl); one built from a
// variable or a field (system(cmd), $1 | getline) names none: Unknown.
// What print writes to its command is that command's standard input,
// which awk builds at run time: print "curl " $0 | "sh" runs what the
// data says, as awk … | sh does (Unknown).

// awks are the awk implementations.
var awks = map[string]bool{"awk": true, "gawk": true, "mawk": true, "nawk": true}

// awkValueOptions are awk's options that take the next word as their
// value; -f's is a program file, -e's (gawk's --source) program text.
var awkValueOptions = map[string]bool{"-F": true, "-v": true, "--assign": true, "--field-separator": true,
	"-i": true, "--include": true, "-l": true, "--load": true, "-W": true}

// awk adds the programs the commands in an awk program run: the program
// is the first operand, or the values of -e and --source; with -f (a
// program file, followed as a file; gawk's -E alike) the first operand
// is data. A program file that is the standard input (-f -, -f
// /dev/stdin) is read from what the line gives it there — Unknown when
// that is not literal or the line gives none — and one a process
// substitution gives (-f <(…)) is Unknown.
func (c *collector) awk(argv []string, known []bool, depth int, in *input) {
	file := false
	var progs []int
	progFile := func(f string) {
		file = true
		switch {
		case f == procSubst:
			c.add(Unknown)
		case f == "-" || stdinPath(f):
			if in == nil || !in.literal {
				c.add(Unknown)
			} else {
				c.awkProgram(ProgramName(argv[0]), in.text, depth)
			}
		}
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			if !file && len(progs) == 0 && i+1 < len(argv) {
				progs = append(progs, i+1)
			}
			i = len(argv)
		case a == "-f" || a == "--file" || a == "-E" || a == "--exec":
			if i+1 < len(argv) {
				progFile(argv[i+1])
			}
			file = true
			i++
		case strings.HasPrefix(a, "--file=") || strings.HasPrefix(a, "--exec="):
			_, f, _ := strings.Cut(a, "=")
			progFile(f)
		case (strings.HasPrefix(a, "-f") || strings.HasPrefix(a, "-E")) && len(a) > 2:
			progFile(a[2:]) // -f-, -fprog.awk
		case a == "-e" || a == "--source":
			if i+1 < len(argv) {
				progs = append(progs, i+1)
			}
			i++
		case awkValueOptions[a]:
			i++
		case strings.HasPrefix(a, "-") && len(a) > 1:
		default:
			if !file && len(progs) == 0 {
				progs = append(progs, i)
			}
			i = len(argv)
		}
	}
	for _, p := range progs {
		if !known[p] {
			c.add(Unknown) // awk "$PROG": a program the line does not show
			continue
		}
		c.awkProgram(ProgramName(argv[0]), argv[p], depth)
	}
}

// awkProgram adds the programs the commands of one awk program run.
func (c *collector) awkProgram(name, prog string, depth int) {
	if !c.spend(len(prog)/2 + 1) {
		return
	}
	cmds, built := awkCommands(prog)
	if built {
		c.add(Unknown)
	}
	for _, cmd := range cmds {
		if cmd.printed {
			// Read as awk's output piped to it, which is not literal.
			c.line(name+" | "+cmd.text, depth+1)
		} else {
			c.line(cmd.text, depth+1)
		}
	}
}

// An awkCommand is a command string an awk program runs; printed: print
// (or printf) writes to it, a pipe to its standard input.
type awkCommand struct {
	text    string
	printed bool
}

// awkCommands are the command strings an awk program runs that begin
// with a string literal, and whether one does not (built at run time).
// It scans the program once, past strings, regular expressions and
// comments.
func awkCommands(prog string) (cmds []awkCommand, built bool) {
	var prev byte      // the last character of code, outside strings
	lastStr := ""      // the string literal just read
	strJoined := false // it followed an operand: a concatenation's end
	for i := 0; i < len(prog); {
		ch := prog[i]
		switch {
		case ch == '#':
			for i < len(prog) && prog[i] != '\n' {
				i++
			}
		case ch == '"':
			strJoined = awkOperand(prev)
			s, end := awkString(prog, i)
			lastStr, prev, i = s, '"', end
		case ch == '@':
			// gawk's indirect call, @f(…): the function a variable names
			// at run time — system among them.
			j := i + 1
			for j < len(prog) && isWordByte(prog[j]) {
				j++
			}
			if j > i+1 && j < len(prog) && prog[j] == '(' {
				built = true
			}
			prev, i = 'a', j
		case ch == '/' && !awkOperand(prev):
			i = awkRegexEnd(prog, i)
			prev = 'a'
		case ch == '_' || ch|0x20 >= 'a' && ch|0x20 <= 'z':
			j := i
			for j < len(prog) && isWordByte(prog[j]) {
				j++
			}
			if prog[i:j] == "system" {
				k := skipBlanks(prog, j)
				if k < len(prog) && prog[k] == '(' {
					cmd, ok := awkCommandAt(prog, k+1)
					if ok {
						cmds = append(cmds, awkCommand{text: cmd})
					} else {
						built = true
					}
				}
			}
			prev, i = 'a', j
		case ch == '|' && i+1 < len(prog) && prog[i+1] == '|':
			prev, i = '|', i+2
		case ch == '|':
			k := i + 1
			if k < len(prog) && prog[k] == '&' {
				k++
			}
			k = skipBlanks(prog, k)
			if strings.HasPrefix(prog[k:], "getline") {
				// cmd | getline: the command is what came before.
				if prev == '"' && !strJoined {
					cmds = append(cmds, awkCommand{text: lastStr})
				} else {
					built = true
				}
			} else if cmd, ok := awkCommandAt(prog, k); ok {
				cmds = append(cmds, awkCommand{text: cmd, printed: true})
			} else {
				built = true
			}
			prev, i = '|', k
		default:
			if ch != ' ' && ch != '\t' {
				prev = ch
			}
			i++
		}
	}
	return cmds, built
}

// awkCommandAt reads the command expression at prog[k:]: a string
// literal that ends the expression or holds a blank (its program word
// complete); ok is false for anything else.
func awkCommandAt(prog string, k int) (string, bool) {
	k = skipBlanks(prog, k)
	if k >= len(prog) || prog[k] != '"' {
		return "", false
	}
	s, end := awkString(prog, k)
	end = skipBlanks(prog, end)
	if end >= len(prog) || strings.IndexByte(")|;}\n,>", prog[end]) >= 0 || strings.ContainsAny(strings.TrimLeft(s, " \t"), " \t") {
		return s, true
	}
	return "", false
}

// awkString is the string literal at prog[i] (a ") with its escapes
// read — octal (\143) and hexadecimal (\x63) ones too: "\143url" is
// curl — and the index past it.
func awkString(prog string, i int) (string, int) {
	var b strings.Builder
	for j := i + 1; j < len(prog); j++ {
		switch prog[j] {
		case '\\':
			if j+1 < len(prog) {
				j++
				switch c := prog[j]; {
				case c == 'n':
					b.WriteByte('\n')
				case c == 't':
					b.WriteByte('\t')
				case c >= '0' && c <= '7':
					v, k := 0, j
					for ; k < len(prog) && k < j+3 && prog[k] >= '0' && prog[k] <= '7'; k++ {
						v = v*8 + int(prog[k]-'0')
					}
					b.WriteByte(byte(v))
					j = k - 1
				case c == 'x' && j+1 < len(prog) && isHex(prog[j+1]):
					v, k := 0, j+1
					for ; k < len(prog) && k < j+3 && isHex(prog[k]); k++ {
						v = v*16 + hexVal(prog[k])
					}
					b.WriteByte(byte(v))
					j = k - 1
				default:
					b.WriteByte(c)
				}
			}
		case '"':
			return b.String(), j + 1
		default:
			b.WriteByte(prog[j])
		}
	}
	return b.String(), len(prog)
}

// awkRegexEnd is the index past the regular expression at prog[i] (a /).
func awkRegexEnd(prog string, i int) int {
	for j := i + 1; j < len(prog); j++ {
		switch prog[j] {
		case '\\':
			j++
		case '/', '\n':
			return j + 1
		}
	}
	return len(prog)
}

// awkOperand reports whether code ending in b ends an operand, after
// which / divides (n / 2) rather than opening a regular expression.
func awkOperand(b byte) bool {
	return isWordByte(b) || b == ')' || b == ']' || b == '$' || b == '"'
}

func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f' }

func hexVal(c byte) int {
	if c <= '9' {
		return int(c - '0')
	}
	return int(c|0x20-'a') + 10
}
