package shellcmd

import (
	"path"
	"slices"
	"strings"
)

// RemoteCopy is the name Programs gives a command copying a file from
// another host or a container here — scp or rsync (scp host:notes.md .,
// rsync -a host:dir/ dir/), docker, podman or nerdctl cp (docker cp
// web:/x ./x), kubectl cp and oc cp or rsync from a pod, gcloud compute
// scp from a VM: the file says what whoever wrote it there wrote (for a
// service, what its callers sent), and Writes names where it lands. A
// copy that only sends (scp a.txt host:, docker cp ./x web:/x) is not one.
const RemoteCopy = "remote copy"

// A copier copies files between here and elsewhere: name is the
// program's (scp, rsync, docker cp, kubectl cp, …), values are its
// options that take the next word as their value, remote reports
// whether an operand is elsewhere, and whole that a directory is copied
// whole without a recursive option (docker cp, kubectl cp).
type copier struct {
	name   string
	values map[string]bool
	remote func(string) bool
	whole  bool
}

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
	// docker compose cp --index N; podman's cp takes none.
	"docker cp": {"--index": true},
	// kubectl cp, oc cp and oc rsync, with kubectl's global options.
	"kubectl cp": {"-c": true, "--container": true, "--retries": true, "-n": true, "--namespace": true, "--context": true,
		"--kubeconfig": true, "--cluster": true, "--user": true, "-s": true, "--server": true, "--request-timeout": true,
		"--token": true, "--exclude": true, "--include": true, "--strategy": true},
	"gcloud compute scp": {"--zone": true, "--project": true, "--port": true, "--scp-flag": true, "--ssh-key-file": true,
		"--strict-host-key-checking": true, "--ssh-key-expire-after": true, "--worker": true, "--account": true,
		"--configuration": true, "--verbosity": true, "--impersonate-service-account": true, "--billing-project": true},
}

// remoteOperand reports whether an scp or rsync operand names a file on
// another host: [user@]host:path (no / before the colon, not a drive
// letter's C:\), host::module, scp:// or rsync://. A container's
// (docker cp web:/x) is written alike.
func remoteOperand(a string) bool {
	if strings.HasPrefix(a, "scp://") || strings.HasPrefix(a, "rsync://") {
		return true
	}
	colon := strings.IndexByte(a, ':')
	return colon > 0 && !strings.Contains(a[:colon], "/") && !(colon == 1 && colon+1 < len(a) && a[colon+1] == '\\')
}

// podOperand reports whether a kubectl cp or oc rsync operand names a
// pod's file: [namespace/]pod:path — a local path with a colon is
// written from / or . (./a:b).
func podOperand(a string) bool {
	colon := strings.IndexByte(a, ':')
	return colon > 0 && strings.Count(a[:colon], "/") <= 1 && !strings.HasPrefix(a, "/") && !strings.HasPrefix(a, ".") &&
		!(colon == 1 && colon+1 < len(a) && a[colon+1] == '\\')
}

// copierAt is the copier an argument vector runs and where its own
// words start (past docker cp's subcommand); ok is false for a command
// that is none.
func copierAt(argv []string) (c copier, at int, ok bool) {
	if len(argv) == 0 {
		return copier{}, 0, false
	}
	switch name := ProgramName(argv[0]); name {
	case "scp", "rsync":
		return copier{name: name, values: remoteCopyValueOptions[name], remote: remoteOperand}, 1, true
	case "docker", "podman", "nerdctl", "docker-compose":
		if sub, i := containerSubcommand(argv); sub == "cp" {
			return copier{name: "docker cp", values: remoteCopyValueOptions["docker cp"], remote: remoteOperand, whole: true}, i + 1, true
		}
	case "kubectl", "oc":
		if sub, i := kubectlSubcommandAt(argv); sub == "cp" || sub == "rsync" && name == "oc" {
			return copier{name: "kubectl cp", values: remoteCopyValueOptions["kubectl cp"], remote: podOperand, whole: true}, i + 1, true
		}
	case "gcloud":
		// gcloud compute scp, gcloud compute tpus tpu-vm scp, gcloud
		// cloud-shell scp (cloudshell:PATH and localhost:PATH).
		if i := slices.Index(argv, "scp"); i > 0 && (slices.Contains(argv[1:i], "compute") || slices.Contains(argv[1:i], "cloud-shell")) {
			return copier{name: "gcloud compute scp", values: remoteCopyValueOptions["gcloud compute scp"], remote: remoteOperand}, i + 1, true
		}
	}
	return copier{}, 0, false
}

// remoteCopy reads a copier's operands: the sources, and the destination
// (the last operand). in: a source is elsewhere and the destination here;
// recursive: -r, -a, --recursive, --recurse, --archive, or a copier that
// copies a directory whole.
func remoteCopy(argv []string) (cp copier, sources []string, dest string, in, recursive bool) {
	cp, i, ok := copierAt(argv)
	if !ok {
		return cp, nil, "", false, false
	}
	recursive = cp.whole
	var operands []string
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			operands = append(operands, argv[i+1:]...)
			i = len(argv)
		case cp.values[a]:
			i++
		case a == "--recursive" || a == "--archive" || a == "--recurse":
			recursive = true
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// A cluster (-avz, -rP 22): its last letter may take a value.
			recursive = recursive || strings.ContainsAny(a, "ra")
			if cp.values["-"+a[len(a)-1:]] {
				i++
			}
		default:
			operands = append(operands, strings.TrimPrefix(a, "localhost:")) // cloud-shell scp's here
		}
	}
	switch {
	case len(operands) == 1 && cp.name == "rsync" && remoteOperand(operands[0]):
		// rsync host:dir lists the files there.
		return cp, operands, "", true, recursive
	case len(operands) < 2:
		return cp, nil, "", false, recursive
	}
	sources, dest = operands[:len(operands)-1], operands[len(operands)-1]
	return cp, sources, dest, !cp.remote(dest) && slices.ContainsFunc(sources, cp.remote), recursive
}

// remoteCopied adds where a copier copies another host's or a
// container's files: the destination, and the name each remote source
// gets in it; a directory (trailing /) when the copy is recursive. A
// destination of - is the standard output (docker cp web:/x -).
func (w *writes) remoteCopied(argv []string) {
	cp, sources, dest, in, recursive := remoteCopy(argv)
	if !in || dest == "" || dest == "-" {
		return
	}
	dir := ""
	if recursive {
		dir = "/"
	}
	whole := strings.TrimRight(dest, "/") + dir
	if dest == "/" {
		dest = ""
	}
	named := false
	for _, src := range sources {
		if !cp.remote(src) {
			continue
		}
		p := src[strings.IndexByte(src, ':')+1:]
		if strings.HasSuffix(p, "/") && cp.name == "rsync" {
			named = false // host:dir/ copies the directory's files, named in dest
			break
		}
		if b := path.Base(strings.TrimLeft(strings.TrimRight(p, "/"), ":")); b != "" && b != "." && b != "/" && b != ".." {
			w.add(strings.TrimRight(dest, "/") + "/" + b + dir)
			named = true
		}
	}
	// The destination itself, unless it is the working directory and
	// what lands in it is named (scp -r h:/srv/docs . writes ./docs/,
	// not the whole directory).
	if !named || strings.Trim(dest, "./") != "" {
		w.add(whole)
	}
}

// copierCommands adds the programs scp and rsync run besides copying:
// scp's -S program (run as ssh) and -D program (an SFTP server run
// here), the commands its -o options give ssh (-o ProxyCommand=…); the
// command rsync's -e or --rsh runs as its remote shell, here (-e 'ssh -o
// ProxyCommand=…', -e ./x.sh), and the one --rsync-path runs on the
// host — each read as a line. A value not literal is Unknown.
func (c *collector) copierCommands(name string, argv []string, known []bool, depth int) {
	letters, line := "cFiJlLoPSDX", map[byte]bool{'S': true, 'D': true}
	if name == "rsync" {
		letters, line = "eBfMT@", map[byte]bool{'e': true}
	}
	run := func(value string, ok bool) {
		if !ok {
			c.add(Unknown)
		} else {
			c.line(value, depth+1)
		}
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			return
		case name == "rsync" && strings.HasPrefix(a, "--"):
			opt, value, eq := strings.Cut(a, "=")
			if opt != "--rsh" && opt != "--rsync-path" {
				if !eq && remoteCopyValueOptions["rsync"][opt] {
					i++
				}
				continue
			}
			if !eq {
				if i+1 >= len(argv) {
					return
				}
				i++
				value = argv[i]
			}
			run(value, known[i])
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 1:
			// A cluster (-rPo X, -oProxyCommand=…, -essh): the first letter
			// that takes a value takes the rest of the word, or the next.
			for k := 1; k < len(a); k++ {
				if strings.IndexByte(letters, a[k]) < 0 {
					continue
				}
				value, vi := a[k+1:], i
				if value == "" {
					if i+1 >= len(argv) {
						return
					}
					i++
					value, vi = argv[i], i
				}
				switch {
				case line[a[k]]:
					run(value, known[vi])
				case a[k] == 'o' && known[vi]:
					c.sshConfigOption(value, depth)
				}
				break
			}
		}
	}
}
