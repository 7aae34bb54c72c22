package shellcmd

import (
	"slices"
	"strings"
)

// fd (Debian's fdfind) lists the files under its search paths — fd
// PATTERN [PATH…], --search-path PATH — as find does, and runs a command
// on them with -x/--exec (once a file) or -X/--exec-batch (once for all):
// the words after the option, up to a ; (fd -x cat, fd -e md -X wc -l).

// fdValueLetters are fd's short options that take a value (-t f, -e md);
// x and X take the command.
const fdValueLetters = "dteEcjSoxX"

// fdValueOptions are fd's long options that take the next word as their
// value.
var fdValueOptions = map[string]bool{"--max-depth": true, "--min-depth": true, "--exact-depth": true, "--type": true,
	"--extension": true, "--exclude": true, "--color": true, "--threads": true, "--size": true,
	"--changed-within": true, "--changed-before": true, "--change-newer-than": true, "--change-older-than": true,
	"--newer": true, "--older": true, "--owner": true, "--max-results": true, "--max-buffer-time": true,
	"--base-directory": true, "--search-path": true, "--path-separator": true, "--ignore-file": true,
	"--batch-size": true, "--format": true, "--and": true}

// fdWords reads fd's arguments: each command -x or -X runs (its words,
// up to a ;, and whether each is literal), and the search's operands
// (the pattern, then the paths) and the values of --search-path and
// --base-directory.
func fdWords(argv []string, known []bool) (cmds [][]string, cmdKnown [][]bool, operands, paths []string) {
	cmd := func(i int, first string, firstKnown bool) int {
		words, k := []string{}, []bool{}
		if first != "" {
			words, k = append(words, first), append(k, firstKnown)
		}
		j := i
		for ; j < len(argv) && argv[j] != ";"; j++ {
			words, k = append(words, argv[j]), append(k, known[j])
		}
		cmds, cmdKnown = append(cmds, words), append(cmdKnown, k)
		return j // the ; or the end
	}
	dashes := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case dashes || a == "-" || !strings.HasPrefix(a, "-"):
			operands = append(operands, a)
		case a == "--":
			dashes = true
		case a == "--exec" || a == "--exec-batch":
			i = cmd(i+1, "", false)
		case strings.HasPrefix(a, "--exec=") || strings.HasPrefix(a, "--exec-batch="):
			_, v, _ := strings.Cut(a, "=")
			i = cmd(i+1, v, known[i])
		case strings.HasPrefix(a, "--"):
			opt, v, eq := strings.Cut(a, "=")
			if !eq && fdValueOptions[opt] && i+1 < len(argv) {
				i++
				v = argv[i]
			}
			if opt == "--search-path" || opt == "--base-directory" {
				paths = append(paths, v)
			}
		default:
			// A cluster: the first letter that takes a value takes the
			// rest of the word, or the next (-Hx cmd, -tf, -xcat).
			for k := 1; k < len(a); k++ {
				if strings.IndexByte(fdValueLetters, a[k]) < 0 {
					continue
				}
				switch rest := a[k+1:]; {
				case a[k] != 'x' && a[k] != 'X':
					if rest == "" {
						i++
					}
				case rest == "":
					i = cmd(i+1, "", false)
				default:
					i = cmd(i+1, rest, known[i])
				}
				break
			}
		}
	}
	return cmds, cmdKnown, operands, paths
}

// fd adds the programs of the commands fd runs on what it finds.
func (c *collector) fd(argv []string, known []bool, depth int) {
	cmds, cmdKnown, _, _ := fdWords(argv, known)
	for i, words := range cmds {
		if len(words) > 0 {
			c.wrapped(words, cmdKnown[i], depth, nil)
		}
	}
}

// fdRoots are the directories an fd call lists everything under: its
// operands past the pattern, --search-path's and --base-directory's
// values; the working directory when it names none.
func fdRoots(argv []string) []string {
	known := slices.Repeat([]bool{true}, len(argv))
	_, _, operands, paths := fdWords(argv, known)
	if len(operands) > 0 {
		paths = append(paths, operands[1:]...)
	}
	if len(paths) == 0 {
		return []string{"."}
	}
	return paths
}
