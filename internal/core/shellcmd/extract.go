package shellcmd

import (
	"path"
	"strings"
)

// archiveSuffixes are the extensions an archive's name ends with, longest
// first.
var archiveSuffixes = []string{".tar.gz", ".tar.xz", ".tar.bz2", ".tar.zst", ".tar.lz", ".tgz", ".txz", ".tbz2", ".tbz",
	".tar", ".zip", ".7z", ".jar", ".whl", ".rar"}

// archiveDir is the directory an archive usually fills when extracted
// without one named (kit-1.2.tar.gz makes kit-1.2/): its base name without
// its extension, in the directory the extractor runs in (tar xzf
// /tmp/kit.tgz fills ./kit/, not /tmp/kit/); "" when it has none of
// archiveSuffixes.
func archiveDir(archive string) string {
	b := path.Base(strings.ReplaceAll(archive, `\`, "/"))
	for _, s := range archiveSuffixes {
		if len(b) > len(s) && strings.HasSuffix(strings.ToLower(b), s) {
			return b[:len(b)-len(s)] + "/"
		}
	}
	return ""
}

// extracted adds the directory an extractor fills — tar x… -C DIR, unzip
// … -d DIR, 7z x -oDIR — or, with none named, the one the archive's name
// suggests (archiveDir: where most archives put their files), as a
// directory written (a trailing slash, as a clone's); nothing for an
// archive read from the standard input (curl … | tar xz: no name to
// guess from, and the working directory holds the user's own files);
// false when argv is no extraction.
func (w *writes) extracted(argv []string) bool {
	name := ProgramName(argv[0])
	dir, archive := "", ""
	switch name {
	case "tar", "bsdtar", "gtar":
		extract := false
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			switch {
			case a == "-C" || a == "--directory":
				if i+1 < len(argv) {
					dir = argv[i+1]
					i++
				}
			case strings.HasPrefix(a, "--directory="):
				dir = a[len("--directory="):]
			case a == "-f" || a == "--file":
				if i+1 < len(argv) {
					archive = argv[i+1]
					i++
				}
			case strings.HasPrefix(a, "--file="):
				archive = a[len("--file="):]
			case a == "-x" || a == "--extract" || a == "--get":
				extract = true
			case strings.HasPrefix(a, "--"):
			case i == 1 && !strings.HasPrefix(a, "-") || shortCluster(a):
				// A cluster (-xzf, or xzf first as tar's old style): f
				// takes the next word, the archive.
				if strings.Contains(a, "x") {
					extract = true
				}
				if strings.HasSuffix(a, "f") && i+1 < len(argv) {
					archive = argv[i+1]
					i++
				}
			}
		}
		if !extract {
			return false
		}
	case "unzip":
		for i := 1; i < len(argv); i++ {
			a := argv[i]
			switch {
			case a == "-d":
				if i+1 < len(argv) {
					dir = argv[i+1]
					i++
				}
			case strings.HasPrefix(a, "-d") && len(a) > 2:
				dir = a[2:]
			case a == "-P":
				i++
			case a == "-x":
				i = len(argv) // the members left out, to the end
			case strings.HasPrefix(a, "-"):
			case archive == "":
				archive = a
			}
		}
	case "7z", "7za", "7zz", "7zr":
		if len(argv) < 2 || argv[1] != "x" && argv[1] != "e" {
			return false
		}
		for _, a := range argv[2:] {
			switch {
			case strings.HasPrefix(a, "-o") && len(a) > 2:
				dir = a[2:]
			case strings.HasPrefix(a, "-"):
			case archive == "":
				archive = a
			}
		}
	default:
		return false
	}
	if strings.Trim(dir, "./") == "" {
		// -C .: among the user's files, where an archive's name is the
		// best guess there is, as with no directory named.
		dir = ""
	}
	switch {
	case dir != "":
		w.add(strings.TrimRight(dir, "/") + "/")
	case archive != "" && archive != "-":
		if d := archiveDir(archive); d != "" {
			w.add(d)
		}
	}
	return true
}
