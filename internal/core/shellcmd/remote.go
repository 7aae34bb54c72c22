package shellcmd

import (
	"encoding/json"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Commands run elsewhere — on another host (ssh HOST 'curl …'), in a
// container (docker exec web curl …, docker run IMAGE wget …, kubectl exec
// POD -- curl …) — print there what they fetch here: their programs are
// the line's too.

// sshValueLetters are ssh's short options that take the next word as
// their value.
const sshValueLetters = "BbcDEeFIiJLlmOoPpQRSWw"

// ssh adds the programs of the line ssh runs on its host: the words after
// the host, joined as ssh joins them; with none, the host's shell runs
// what ssh reads on its standard input (ssh host <<'SH' … SH), as does
// a shell the line runs without -c (ssh host bash -s < …).
func (c *collector) ssh(argv []string, known []bool, depth int, in *input) {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		c.sshOption(argv, known, i, depth)
		switch {
		case a == "--":
			if i+2 <= len(argv) {
				c.remoteLine(argv[i+2:], known[i+2:], depth, in)
			}
			return
		case sshTakesNext(a):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			// OpenSSH reads options after the host too (ssh host -p 22
			// cmd), and a -- there ends them.
			j := i + 1
			for j < len(argv) {
				b := argv[j]
				if b == "--" {
					j++
					break
				}
				if !strings.HasPrefix(b, "-") || b == "-" {
					break
				}
				c.sshOption(argv, known, j, depth)
				if sshTakesNext(b) {
					j++
				}
				j++
			}
			c.remoteLine(argv[min(j, len(argv)):], known[min(j, len(argv)):], depth, in)
			return
		}
	}
}

// sshCommandOptions are ssh's -o options whose value is a command: run
// here (LocalCommand, once connected; ProxyCommand, KnownHostsCommand) or
// on the host (RemoteCommand).
var sshCommandOptions = []string{"localcommand", "proxycommand", "knownhostscommand", "remotecommand"}

// sshOption adds the programs of the command an -o option at argv[i]
// gives ssh (-o LocalCommand='curl …', -oProxyCommand=…, -o
// 'RemoteCommand curl …'): its value read as a line.
func (c *collector) sshOption(argv []string, known []bool, i, depth int) {
	a := argv[i]
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return
	}
	value, vi := "", i
	for k := 1; k < len(a); k++ {
		if strings.IndexByte(sshValueLetters, a[k]) < 0 {
			continue
		}
		if a[k] != 'o' {
			return
		}
		if value = a[k+1:]; value == "" && i+1 < len(argv) {
			value, vi = argv[i+1], i+1
		}
		break
	}
	if known[vi] { // an option not literal: ssh -o "IdentityFile=$KEY"
		c.sshConfigOption(value, depth)
	}
}

// sshConfigOption adds the programs of the command an ssh -o option's
// value gives (LocalCommand=curl …, 'ProxyCommand nc %h %p'): a line; and
// when Hosts reads the line, the hosts its ProxyJump or HostName names.
func (c *collector) sshConfigOption(value string, depth int) {
	key, cmd, ok := strings.Cut(value, "=")
	if k, v, blank := strings.Cut(strings.TrimSpace(value), " "); blank && (!ok || len(k) < len(key)) {
		key, cmd, ok = k, v, true
	}
	key = strings.ToLower(strings.TrimSpace(key))
	switch {
	case !ok:
	case key == "proxyjump" || key == "hostname":
		// Where ssh connects instead, or first (-o ProxyJump=jump.evil.example).
		c.addHosts(strings.TrimSpace(cmd))
	case slices.Contains(sshCommandOptions, key):
		c.line(cmd, depth+1)
	}
}

// sshTakesNext reports whether an ssh option takes the next word as its
// value: a cluster read as getopt reads it, up to a letter that takes a
// value, whose value is the rest of the word or, when none is, the next
// word (-p 22, -tp 22; not -p22, -oX=y).
func sshTakesNext(a string) bool {
	if len(a) < 2 || a[0] != '-' || a[1] == '-' {
		return false
	}
	return clusterTakesNext(a, sshValueLetters)
}

// clusterTakesNext reports whether the cluster of short options a (-tp,
// -Hiu) takes the next word as its value: its first letter among values,
// read as getopt reads a cluster, is its last (-tp 22; not -p22, whose
// value is the rest of the word).
func clusterTakesNext(a, values string) bool {
	k := strings.IndexAny(a[1:], values)
	return k >= 0 && k+2 == len(a)
}

// remoteLine adds the programs of a line given as words (ssh's): Unknown
// when one is not literal; with no words, the script in gives the host's
// shell.
func (c *collector) remoteLine(words []string, known []bool, depth int, in *input) {
	if len(words) == 0 {
		if in != nil {
			c.stdinScript("sh", []string{"sh"}, in, depth)
		}
		return
	}
	if in != nil && !slices.Contains(known, false) {
		// The host's shell splits the line, and its first command reads
		// the input: ssh host 'bash -s' <<'SH', ssh host sudo bash <<'SH',
		// ssh host 'sudo -s' <<'SH', ssh host python3 - <<'PY'.
		if fields := strings.Fields(strings.Join(words, " ")); len(fields) > 0 && depth < maxDepth {
			c.call(fields, slices.Repeat([]bool{true}, len(fields)), depth+1, in)
		}
	}
	if slices.Contains(known, false) {
		c.add(Unknown)
		return
	}
	line := strings.Join(words, " ")
	if c.spend(len(line)/2+1) && printsHostFile(line) {
		// ssh host cat /var/log/nginx/access.log is scp
		// host:/var/log/nginx/access.log /dev/stdout.
		c.add(RemoteCopy)
	}
	c.line(line, depth+1)
}

// fileFirstOperand are the programs printsHostFile takes for printing a
// file they are given, and whether their first operand is not a file —
// grep's pattern, sed's script, jq's filter (unless -e, -f or --regexp
// gives it).
var fileFirstOperand = map[string]bool{"cat": false, "tac": false, "nl": false, "head": false, "tail": false,
	"strings": false, "od": false, "base64": false, "rev": false, "cut": false, "paste": false, "column": false,
	"sort": false, "uniq": false, "comm": false, "diff": false, "grep": true, "egrep": true, "fgrep": true,
	"rg": true, "sed": true, "jq": true}

// fileValueOptions are those programs' options that take the next word
// as their value (head -n 100, cut -d :, grep -A 3); jq's --arg and
// --argjson take two.
var fileValueOptions = map[string][]string{
	"head": {"-n", "-c"}, "tail": {"-n", "-c", "-s", "--pid"}, "cut": {"-d", "-f", "-c", "-b"},
	"sort": {"-k", "-t", "-S", "-T"}, "uniq": {"-f", "-s", "-w"}, "od": {"-A", "-j", "-N", "-t", "-w"},
	"nl": {"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"}, "base64": {"-w"},
	"column": {"-s", "-c", "-o"}, "strings": {"-n", "-t", "-e"}, "diff": {"-U", "-C"},
	"grep": searchValueOptions["grep"], "egrep": searchValueOptions["grep"], "fgrep": searchValueOptions["grep"],
	"rg": searchValueOptions["rg"], "sed": {"-e", "-f", "-l"}, "jq": {"--arg", "--argjson", "--indent"},
}

// printsHostFile reports whether a line another host runs only reads
// (ReadsOnly; past a leading sudo and its options) and prints a file it
// names there — cat, head, tail, grep, sed -n, jq … of a path: the
// file's content comes back, as scp's copy of it to the standard output
// would (RemoteCopy). A command that names no file (ssh host uptime,
// ssh host ls /var/log, ssh host git log) is not one.
func printsHostFile(line string) bool {
	if f := strings.Fields(line); len(f) > 1 && f[0] == "sudo" {
		i := 1
		for i < len(f) && strings.HasPrefix(f[i], "-") {
			if f[i] == "-u" || f[i] == "-g" || sudoValueOptions[f[i]] {
				i++
			}
			i++
		}
		line = strings.Join(f[min(i, len(f)):], " ")
	}
	if !ReadsOnly(line) {
		return false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return false
	}
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || found || len(call.Args) == 0 {
			return !found
		}
		argv := make([]string, len(call.Args))
		for i, w := range call.Args {
			argv[i], _ = literal(w)
		}
		found = namesFileToPrint(argv)
		return !found
	})
	return found
}

// namesFileToPrint reports whether a command of fileFirstOperand's
// prints a file an operand names (not the standard input's -).
func namesFileToPrint(argv []string) bool {
	name := ProgramName(argv[0])
	pattern, ok := fileFirstOperand[name]
	if !ok {
		return false
	}
	if pattern && name != "jq" && slices.ContainsFunc(argv[1:], func(a string) bool {
		return a == "-e" || a == "-f" || strings.HasPrefix(a, "--regexp") || strings.HasPrefix(a, "--file") ||
			strings.HasPrefix(a, "--expression")
	}) {
		pattern = false
	}
	dashes := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case !dashes && a == "--":
			dashes = true
		case !dashes && strings.HasPrefix(a, "-") && a != "-":
			if slices.Contains(fileValueOptions[name], a) {
				i++
				if a == "--arg" || a == "--argjson" {
					i++ // jq --arg NAME VALUE
				}
			}
		case pattern:
			pattern = false
		case a != "-":
			return true
		}
	}
	return false
}

// containerValueOptions are the options of docker's and podman's run,
// create, exec and compose run/exec, and of their globals, that take the
// next word as their value. One missing takes its value for the image or
// the container and the image for the program: the command's words are
// then read as the image's arguments, and its program, if it is one a
// reading names, as a word the image runs (over-approximated below).
var containerValueOptions = map[string]bool{
	"-a": true, "--attach": true, "--add-host": true, "--annotation": true, "--blkio-weight": true, "--cap-add": true,
	"--cap-drop": true, "--cgroup-parent": true, "--cgroupns": true, "--cidfile": true, "--cpu-period": true,
	"--cpu-quota": true, "--cpu-shares": true, "-c": true, "--cpus": true, "--cpuset-cpus": true, "--cpuset-mems": true,
	"--device": true, "--device-cgroup-rule": true, "--dns": true, "--dns-option": true, "--dns-search": true,
	"--domainname": true, "--entrypoint": true, "-e": true, "--env": true, "--env-file": true, "--expose": true,
	"--gpus": true, "--group-add": true, "--health-cmd": true, "--health-interval": true, "--health-retries": true,
	"--health-start-period": true, "--health-timeout": true, "-h": true, "--hostname": true, "--ip": true, "--ip6": true,
	"--ipc": true, "--isolation": true, "--kernel-memory": true, "-l": true, "--label": true, "--label-file": true,
	"--link": true, "--log-driver": true, "--log-opt": true, "--mac-address": true, "-m": true, "--memory": true,
	"--memory-reservation": true, "--memory-swap": true, "--memory-swappiness": true, "--mount": true, "--name": true,
	"--network": true, "--net": true, "--network-alias": true, "--oom-score-adj": true, "--pid": true,
	"--pids-limit": true, "--platform": true, "-p": true, "--publish": true, "--pull": true, "--restart": true,
	"--runtime": true, "--security-opt": true, "--shm-size": true, "--stop-signal": true, "--stop-timeout": true,
	"--storage-opt": true, "--sysctl": true, "--tmpfs": true, "--ulimit": true, "-u": true, "--user": true,
	"--userns": true, "--uts": true, "-v": true, "--volume": true, "--volumes-from": true, "-w": true, "--workdir": true,
	"--detach-keys": true, "--context": true, "-H": true, "--host": true, "--config": true, "--log-level": true,
	"-f": true, "--file": true, "--project-name": true, "--profile": true, "--project-directory": true, "--index": true,
	"--arch": true, "--os": true, "--variant": true, "--pod": true, "--secret": true, "--hooks-dir": true,
}

// container adds the programs a docker, podman or nerdctl command runs in
// a container: exec's command, and run's — the words after the image, and
// the image's own program, named after it (curlimages/curl, alpine/git).
func (c *collector) container(argv []string, known []bool, depth int, in *input) {
	s, i := containerSubcommand(argv)
	compose := ProgramName(argv[0]) == "docker-compose" || slices.Contains(argv[1:min(i, len(argv))], "compose")
	switch {
	case s == "logs":
		// docker logs web, docker compose logs: what a container's
		// programs printed, as kubectl logs.
		c.add(PodLogs)
		return
	case s == "build":
		if remoteBuild(argv[i+1:]) {
			c.add(RemoteCode) // docker build https://github.com/x/y.git: its RUN lines
		}
		if in != nil && dockerfileOnStdin(argv[i+1:]) {
			c.dockerfile(in, depth)
		}
		return
	case s == "exec" && latestExec(argv[i+1:]):
		// podman exec -l CMD: the latest container, named by no word.
		for j := i + 1; j < len(argv); j++ {
			switch a := argv[j]; {
			case a != "-l" && containerValueOptions[a]:
				j++
			case strings.HasPrefix(a, "-"):
			default:
				c.wrapped(argv[j:], known[j:], depth, in)
				return
			}
		}
		return
	case s != "run" && s != "exec":
		return
	}
	c.containerArgs(argv, known, i+1, s == "run", compose, "", maxBranches, depth, in)
}

// containerSubcommand is the command a docker, podman or nerdctl
// argument vector runs, past its global options and a group's name
// (docker container cp, docker compose logs, podman pod logs), and its
// index.
func containerSubcommand(argv []string) (string, int) {
	i := 1
	sub := func() string {
		for ; i < len(argv); i++ {
			switch a := argv[i]; {
			case containerValueOptions[a]:
				i++
			case strings.HasPrefix(a, "-"):
			default:
				return a
			}
		}
		return ""
	}
	s := sub()
	switch s {
	case "container", "compose", "buildx", "image", "builder", "service", "pod":
		i++
		s = sub()
	}
	return s, i
}

// latestExec reports whether podman exec's options say --latest (-l, or
// in a cluster of its flags: -itl), so that its first word is the
// command, not a container.
func latestExec(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--latest" || a == "--latest=true":
			return true
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Trim(a[1:], "itdl") == "" && strings.Contains(a, "l"):
			return true
		case !strings.HasPrefix(a, "-"):
			return false
		}
	}
	return false
}

// dockerfileOnStdin reports whether docker build's (or podman build's)
// arguments take the Dockerfile from the standard input: a - for the
// context, or -f - (--file -, -f-, --file=-).
func dockerfileOnStdin(args []string) bool {
	for i, a := range args {
		switch {
		case a == "-", a == "-f-", a == "--file=-":
			return true
		case (a == "-f" || a == "--file") && i+1 < len(args) && args[i+1] == "-":
			return true
		}
	}
	return false
}

// buildValueOptions are docker build's, docker buildx build's and podman
// build's options that take the next word as their value, besides
// containerValueOptions.
var buildValueOptions = map[string]bool{"-t": true, "--tag": true, "--build-arg": true, "--target": true,
	"--secret": true, "--ssh": true, "--cache-from": true, "--cache-to": true, "-o": true, "--output": true,
	"--progress": true, "--iidfile": true, "--build-context": true, "--metadata-file": true, "--builder": true,
	"--attest": true, "--sbom": true, "--provenance": true, "--call": true, "--allow": true, "--authfile": true,
	"--cert-dir": true, "--creds": true, "--decryption-key": true, "--jobs": true, "--sign-by": true,
	"--timestamp": true, "--from": true, "--format": true, "--unsetenv": true, "--build-arg-file": true,
	"--ignorefile": true, "--layer-label": true, "--manifest": true, "--retry": true, "--retry-delay": true}

// remoteBuild reports whether docker build's (or podman build's)
// arguments build from a context fetched from where they name it — a
// git repository (https://github.com/x/y.git#main, git@host:x/y.git,
// github.com/x/y) or a tarball's or a Dockerfile's URL — or, for podman,
// a Containerfile's URL given to -f: the Dockerfile and its RUN lines
// are whoever wrote them there (remote code). The context is the one
// operand; every word not an option's value is taken for it.
func remoteBuild(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-f" || a == "--file":
			if i+1 < len(args) && remoteContext(args[i+1]) {
				return true
			}
			i++
		case strings.HasPrefix(a, "--file="):
			if remoteContext(a[len("--file="):]) {
				return true
			}
		case buildValueOptions[a] || containerValueOptions[a]:
			i++
		case strings.HasPrefix(a, "-"):
		case remoteContext(a):
			return true
		}
	}
	return false
}

// remoteContext reports whether a build's context names another's files
// as docker reads it: a URL (http, https, git, ssh), git@host:…, or
// github.com/… (a repository there).
func remoteContext(a string) bool {
	l := strings.ToLower(a)
	for _, p := range []string{"http://", "https://", "git://", "ssh://", "git@", "github.com/"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// dockerfile adds what a Dockerfile given on the standard input runs as
// it builds: each RUN's shell line (continued lines joined), an exec
// form's words; a RUN with a here-document, whose body is its script,
// fails closed to every word after it; a Dockerfile that is not literal
// to Unknown. A RUN after an ADD of a URL or a git repository (ADD
// https://…/i.sh /i.sh, RUN sh /i.sh) may run what it fetched: remote
// code.
func (c *collector) dockerfile(in *input, depth int) {
	if !in.literal {
		c.add(Unknown)
		return
	}
	if depth >= maxDepth {
		c.tooDeep([]string{in.text})
		return
	}
	lines := strings.Split(in.text, "\n")
	added := false // an ADD of a URL or a repository came before
	for k := 0; k < len(lines); k++ {
		instr := strings.TrimSpace(lines[k])
		if strings.HasPrefix(instr, "#") {
			continue
		}
		for strings.HasSuffix(instr, "\\") && k+1 < len(lines) {
			k++
			instr = strings.TrimSuffix(instr, "\\") + " " + strings.TrimSpace(lines[k])
		}
		kw, rest, _ := strings.Cut(instr, " ")
		if strings.EqualFold(kw, "ADD") && slices.ContainsFunc(strings.Fields(rest), remoteContext) {
			// ADD https://…/x.sh, ADD git@host:x/y.git: another's files,
			// which the RUN lines after it may run.
			added = true
		}
		if !strings.EqualFold(kw, "RUN") {
			continue
		}
		if added {
			c.add(RemoteCode)
		}
		rest = strings.TrimSpace(rest)
		for strings.HasPrefix(rest, "--") { // --mount=…, --network=…
			_, rest, _ = strings.Cut(rest, " ")
			rest = strings.TrimSpace(rest)
		}
		var exec []string
		switch {
		case strings.Contains(rest, "<<"):
			c.words(strings.Join(append([]string{rest}, lines[k+1:]...), "\n"))
			return
		case strings.HasPrefix(rest, "[") && json.Unmarshal([]byte(rest), &exec) == nil:
			c.wrapped(exec, slices.Repeat([]bool{true}, len(exec)), depth, nil)
		default:
			c.line(rest, depth+1)
		}
	}
}

// maxBranches bounds the options a reading takes both ways (an option it
// does not know, which may or may not take a value).
const maxBranches = 3

// containerFlags are the long options of docker's and podman's run and
// exec that take no value; one neither here nor among
// containerValueOptions is read both ways.
var containerFlags = map[string]bool{"--rm": true, "--init": true, "--privileged": true, "--read-only": true,
	"--detach": true, "--interactive": true, "--tty": true, "--no-healthcheck": true, "--oom-kill-disable": true,
	"--publish-all": true, "--quiet": true, "--disable-content-trust": true, "--sig-proxy": true, "--no-deps": true,
	"--service-ports": true, "--use-aliases": true, "--remove-orphans": true, "--build": true, "--privileged=true": true}

// containerArgs reads a container's run or exec from argv[i]: past its
// options to the image, the container or the service, whose words after
// it are the command — and, for run, the image's own program (or the
// entrypoint's) with them.
func (c *collector) containerArgs(argv []string, known []bool, i int, run, compose bool, entrypoint string, branches, depth int, in *input) {
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--entrypoint" && i+1 < len(argv):
			entrypoint = argv[i+1]
			i++
		case strings.HasPrefix(a, "--entrypoint="):
			entrypoint = a[len("--entrypoint="):]
		case containerValueOptions[a]:
			i++
		case strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && !containerFlags[a] && !runnerFlags[a] && branches > 0 && c.branch():
			// An option this reading does not know: its value, if it
			// takes one, is the next word.
			branches--
			c.containerArgs(argv, known, i+2, run, compose, entrypoint, branches, depth, in)
		case strings.HasPrefix(a, "-"):
		default:
			// The image, the container or the service.
			args, argk := argv[i+1:], known[i+1:]
			if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				c.wrapped(args, argk, depth, in)
			}
			switch {
			case run && entrypoint != "":
				c.wrapped(append([]string{entrypoint}, args...), append([]bool{true}, argk...), depth, in)
			case run && !compose:
				c.wrapped(append([]string{imageProgram(a)}, args...), append([]bool{known[i]}, argk...), depth, in)
			}
			return
		}
	}
}

// kubectl adds the programs kubectl exec (or OpenShift's oc exec) runs in
// a pod — the words after --, or after the pod — and OpenShift's oc rsh
// POD CMD; kubectl run and kubectl debug: the words after --, and the
// image's own program (--image=curlimages/curl). kubectl logs (oc logs)
// is PodLogs.
func (c *collector) kubectl(argv []string, known []bool, depth int, in *input) {
	switch kubectlSubcommand(argv) {
	case "run", "debug":
		args, argk := []string(nil), []bool(nil)
		if dd := slices.Index(argv, "--"); dd >= 0 {
			args, argk = argv[dd+1:], known[dd+1:]
			if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
				c.wrapped(args, argk, depth, in)
			}
		}
		if image := optionValue(argv, "--image", "--image"); image != "" {
			c.wrapped(append([]string{imageProgram(image)}, args...), append([]bool{true}, argk...), depth, in)
		}
		return
	case "rsh":
		c.podCommand(argv, known, slices.Index(argv, "rsh"), depth, in)
		return
	case "logs":
		c.add(PodLogs)
		return
	}
	if exec := slices.Index(argv, "exec"); exec >= 0 {
		c.podCommand(argv, known, exec, depth, in)
	}
}

// PodLogs is the name Programs gives kubectl logs (oc logs, stern),
// docker logs (podman logs, docker compose logs) and a hosted service's
// logs (serviceLogs: heroku logs, aws logs tail, gcloud logging read, …):
// what a pod's, a container's or a service's programs printed, which for
// a service is what its callers sent it — a request's path, a header, a
// message body.
const PodLogs = "kubectl logs"

// podCommand adds the command kubectl exec or oc rsh, the subcommand at
// argv[sub], runs in its pod: the words after --, or after the pod.
func (c *collector) podCommand(argv []string, known []bool, sub, depth int, in *input) {
	if dd := slices.Index(argv[sub:], "--"); dd >= 0 {
		c.wrapped(argv[sub+dd+1:], known[sub+dd+1:], depth, in)
		return
	}
	for i := sub + 1; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "-c" || a == "--container" || a == "-n" || a == "--namespace" || a == "--context" ||
			a == "--kubeconfig" || a == "-f" || a == "--filename" || a == "--pod-running-timeout" || a == "--cluster" ||
			a == "--user" || a == "--shell" || a == "--timeout":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			c.wrapped(argv[i+1:], known[i+1:], depth, in)
			return
		}
	}
}

// kubectlSubcommand is the command a kubectl argument vector runs, past
// its global options and their values.
func kubectlSubcommand(argv []string) string {
	s, _ := kubectlSubcommandAt(argv)
	return s
}

// kubectlSubcommandAt is kubectlSubcommand and its index.
func kubectlSubcommandAt(argv []string) (string, int) {
	for i := 1; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "-n" || a == "--namespace" || a == "--context" || a == "--kubeconfig" || a == "--cluster" || a == "--user" || a == "-s" || a == "--server":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a, i
		}
	}
	return "", len(argv)
}

// imageProgram is the program an image is named after: its name without
// its tag or digest (curlimages/curl:8.8.0 runs curl).
func imageProgram(image string) string {
	slash := strings.LastIndexByte(image, '/') + 1
	if j := strings.IndexAny(image[slash:], ":@"); j >= 0 {
		image = image[:slash+j]
	}
	return image
}
