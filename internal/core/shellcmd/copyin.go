package shellcmd

import (
	"path"
	"slices"
	"strings"
)

// RemoteCopy is the name Programs gives scp or rsync copying a file from
// another host here (scp host:notes.md ., rsync -a host:dir/ dir/): the
// file says what whoever wrote it there wrote, and Writes names where
// it lands. A copy that only sends (scp a.txt host:) is not one.
const RemoteCopy = "remote copy"

// remoteCopyValueOptions are scp's and rsync's options that take the
// next word as their value.
var remoteCopyValueOptions = map[string]map[string]bool{
	"scp": {"-c": true, "-F": true, "-i": true, "-J": true, "-l": true, "-o": true, "-P": true, "-S": true, "-D": true, "-X": true},
	"rsync": {"-e": true, "--rsh": true, "--rsync-path": true, "-f": true, "--filter": true, "--exclude": true,
		"--include": true, "--exclude-from": true, "--include-from": true, "--files-from": true, "-T": true,
		"--temp-dir": true, "--compare-dest": true, "--copy-dest": true, "--link-dest": true, "-B": true,
		"--block-size": true, "--chmod": true, "--chown": true, "--usermap": true, "--groupmap": true, "--port": true,
		"--password-file": true, "--log-file": true, "--partial-dir": true, "--max-size": true, "--min-size": true,
		"--timeout": true, "--contimeout": true, "--bwlimit": true, "--out-format": true, "--suffix": true,
		"--backup-dir": true, "-M": true, "--remote-option": true, "--info": true, "--debug": true, "--iconv": true,
		"--checksum-choice": true, "--compress-choice": true, "--compress-level": true, "--max-delete": true,
		"--modify-window": true, "--sockopts": true, "--address": true},
}

// remoteOperand reports whether an scp or rsync operand names a file on
// another host: [user@]host:path (no / before the colon, not a drive
// letter's C:\), host::module, scp:// or rsync://.
func remoteOperand(a string) bool {
	if strings.HasPrefix(a, "scp://") || strings.HasPrefix(a, "rsync://") {
		return true
	}
	colon := strings.IndexByte(a, ':')
	return colon > 0 && !strings.Contains(a[:colon], "/") && !(colon == 1 && colon+1 < len(a) && a[colon+1] == '\\')
}

// remoteCopy reads scp's or rsync's operands: the sources, and the
// destination (the last operand). in: a source is on another host and the
// destination here; recursive: -r, -a, --recursive, --archive.
func remoteCopy(name string, argv []string) (sources []string, dest string, in, recursive bool) {
	values := remoteCopyValueOptions[name]
	var operands []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			operands = append(operands, argv[i+1:]...)
			i = len(argv)
		case values[a]:
			i++
		case a == "--recursive" || a == "--archive":
			recursive = true
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// A cluster (-avz, -rP 22): its last letter may take a value.
			recursive = recursive || strings.ContainsAny(a, "ra")
			if values["-"+a[len(a)-1:]] {
				i++
			}
		default:
			operands = append(operands, a)
		}
	}
	switch {
	case len(operands) == 1 && name == "rsync" && remoteOperand(operands[0]):
		// rsync host:dir lists the files there.
		return operands, "", true, recursive
	case len(operands) < 2:
		return nil, "", false, recursive
	}
	sources, dest = operands[:len(operands)-1], operands[len(operands)-1]
	return sources, dest, !remoteOperand(dest) && slices.ContainsFunc(sources, remoteOperand), recursive
}

// remoteCopied adds where scp or rsync copies another host's files: the
// destination, and the name each remote source gets in it; a directory
// (trailing /) when the copy is recursive.
func (w *writes) remoteCopied(name string, argv []string) {
	sources, dest, in, recursive := remoteCopy(name, argv)
	if !in || dest == "" {
		return
	}
	dir := ""
	if recursive {
		dir = "/"
	}
	w.add(strings.TrimRight(dest, "/") + dir)
	if dest == "/" {
		dest = ""
	}
	for _, src := range sources {
		if !remoteOperand(src) {
			continue
		}
		p := src[strings.IndexByte(src, ':')+1:]
		if strings.HasSuffix(p, "/") && name == "rsync" {
			continue // host:dir/ copies the directory's files, named in dest
		}
		if b := path.Base(strings.TrimLeft(strings.TrimRight(p, "/"), ":")); b != "" && b != "." && b != "/" && b != ".." {
			w.add(strings.TrimRight(dest, "/") + "/" + b + dir)
		}
	}
}
