package shellcmd

// What runs a command Interactive reads in turn, the terminal still its
// input: wrappers, runners, wsl, xargs and parallel, systemd-run,
// containers and pods.

import (
	"slices"
	"strings"
)

// A wrapSpec says how a wrapper's words give the command it runs, the
// terminal its input.
type wrapSpec struct {
	// values are the short option letters that take a value (the rest
	// of the word, or the next word); longValues the long options that
	// take the next word.
	values     string
	longValues []string
	// operands are the words before the command (timeout's duration,
	// chroot's root, flock's file).
	operands int
	// bare: with no command it runs a shell.
	bare bool
	// line are the options whose value is a shell line it runs.
	line []string
	// stop are the short option letters with which it runs no command
	// here (command -v, strace -p, taskset -p).
	stop string
	// assigns: NAME=value words before the command (env).
	assigns bool
}

// wrapperSpecs are the wrappers (among the package's wrappers) that run
// a command with the terminal as its input. nohup is not among them: it
// gives the command no terminal to read; nor is watch.
var wrapperSpecs = map[string]wrapSpec{
	"env":          {values: "uCS", longValues: []string{"--unset", "--chdir"}, assigns: true, line: []string{"-S", "--split-string"}},
	"exec":         {values: "a"},
	"command":      {stop: "vV"},
	"builtin":      {},
	"time":         {values: "of", longValues: []string{"--output", "--format"}},
	"nice":         {values: "n", longValues: []string{"--adjustment"}},
	"timeout":      {values: "sk", longValues: []string{"--signal", "--kill-after"}, operands: 1},
	"stdbuf":       {values: "ioe", longValues: []string{"--input", "--output", "--error"}},
	"unbuffer":     {},
	"setsid":       {},
	"caffeinate":   {values: "tw"},
	"proxychains":  {values: "f"},
	"proxychains4": {values: "f"},
	"torsocks":     {values: "upaP", longValues: []string{"--user", "--pass", "--address", "--port"}},
	"firejail":     {bare: true},
	"rlwrap":       {values: "bCefgHlOPqsStwz"},
	"strace":       {values: "eoOsSuEIaXbUP", stop: "p"},
	"ltrace":       {values: "eoOsSuEnAaDFP", stop: "p"},
	"ionice":       {values: "cn", stop: "pPu"},
	"taskset":      {operands: 1, stop: "p"},
	"chrt":         {operands: 1, values: "TPD", stop: "p"},
	"chroot":       {longValues: []string{"--userspec", "--groups"}, operands: 1, bare: true},
	"unshare":      {values: "SGRw", bare: true},
	"nsenter":      {values: "tSG", longValues: []string{"--target", "--setuid", "--setgid"}, bare: true},
	"pkexec":       {longValues: []string{"--user"}, bare: true},
	"fakeroot":     {values: "lsib", bare: true},
	"flock":        {values: "wE", longValues: []string{"--timeout", "--conflict-exit-code"}, operands: 1, line: []string{"-c", "--command"}},
	"sshpass":      {values: "pfdP"},
	"aws-vault":    {longValues: []string{"--duration", "--region", "--mfa-token", "--backend"}, operands: 2, bare: true},
	"op":           {longValues: []string{"--env-file", "--account"}, operands: 1},
	"doppler":      {longValues: []string{"--project", "-p", "--config", "-c", "--token"}, operands: 1, line: []string{"--command"}},
	"saml2aws":     {longValues: []string{"--exec-profile", "-a", "--idp-account"}, operands: 1},
	"grc":          {},
	"catchsegv":    {},
	"valgrind":     {},
	// review B: wrappers that run their command with the terminal, or
	// a shell when given none (bare).
	"ssh-agent":        {values: "aEOPt", stop: "k"},
	"dbus-run-session": {longValues: []string{"--config-file", "--dbus-daemon"}},
	"xvfb-run":         {values: "efnpsw", longValues: []string{"--error-file", "--auth-file", "--server-num", "--xauth-protocol", "--server-args", "--wait"}},
	"setpriv": {longValues: []string{"--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--inh-caps",
		"--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile",
		"--landlock-access", "--landlock-rule", "--seccomp-filter"}, stop: "d"},
	"prlimit":     {values: "p", stop: "p", longValues: []string{"--pid"}},
	"cgexec":      {values: "g"},
	"numactl":     {values: "CNmipPw", stop: "sH"},
	"run0":        {values: "ugD", longValues: []string{"--user", "--group", "--chdir", "--nice", "--setenv", "--unit", "--property", "--description", "--slice", "--machine", "--background"}, bare: true},
	"gosu":        {operands: 1},
	"su-exec":     {operands: 1},
	"setuidgid":   {operands: 1},
	"envuidgid":   {operands: 1},
	"chpst":       {values: "uUbe/nlLmdofcpr"},
	"dumb-init":   {values: "r"},
	"tini":        {values: "pe"},
	"proot":       {values: "rbmqwvkiRS", bare: true},
	"schroot":     {values: "cudn", longValues: []string{"--chroot", "--user", "--directory", "--session-name", "--option"}, stop: "libe", bare: true},
	"arch-chroot": {values: "u", operands: 1, bare: true},
	"fakechroot":  {values: "lde", bare: true},
	"faketime":    {values: "p", longValues: []string{"--date-prog"}, operands: 1},
	"torify":      {},
	"lima":        {bare: true},
	"lxc-attach":  {values: "nPasLlvugfo", longValues: []string{"--name", "--lxcpath", "--arch", "--namespaces", "--set-var", "--uid", "--gid", "--rcfile", "--logfile", "--logpriority", "--pty-log"}, bare: true},
}

// wrapper reads what a wrapper runs: past its options (and their values)
// and its operands, the command, with the terminal its input.
func (r *ireader) wrapper(name string, spec wrapSpec, args []string, depth int) bool {
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") && slices.Contains(spec.line, k) {
			return r.line(v, depth+1, nil)
		}
		switch {
		case a == "--":
			if i+1 < len(args) {
				return r.argv(args[i+1:], depth+1)
			}
			return spec.bare
		case slices.Contains(spec.line, a):
			return i+1 < len(args) && r.line(args[i+1], depth+1, nil)
		case slices.Contains(spec.longValues, a):
			i++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1 && operands == 0:
			// A letter that stops the wrapper, before the cluster's
			// first letter taking a value.
			if s, v := strings.IndexAny(a[1:], spec.stop), strings.IndexAny(a[1:], spec.values); s >= 0 && (v < 0 || s <= v) {
				return false
			}
			if clusterTakesNext(a, spec.values) {
				i++
			}
		case spec.assigns && strings.Contains(a, "="):
		case operands < spec.operands:
			operands++
		default:
			return r.argv(args[i:], depth+1)
		}
	}
	return spec.bare
}

// runner reads a runner's command (uv run python, poetry run ipython,
// bundle exec irb, npx ts-node), its shell (poetry shell, pipenv shell,
// nix develop, nix-shell), reusing the runners' table; decided is false
// when the call is none of these.
func (r *ireader) runner(name string, rn runner, argv []string, depth int) (interactive, decided bool) {
	i := 1
	if len(rn.subs) > 0 || name == "nix" {
		for ; i < len(argv); i++ {
			if strings.HasPrefix(argv[i], "-") {
				if slices.Contains(rn.values, argv[i]) {
					i++
				}
				continue
			}
			break
		}
		if i >= len(argv) {
			return false, false
		}
		switch sub := argv[i]; {
		case sub == "shell" && name != "nix" && name != "mise" && name != "asdf":
			return true, true // poetry shell, pipenv shell, hatch shell, pixi shell, devbox shell
		case name == "nix" && sub == "run":
			return false, true
		case !slices.Contains(rn.subs, sub):
			return false, false
		}
		if name == "uv" && argv[i] == "tool" {
			if i+1 >= len(argv) || argv[i+1] != "run" {
				return false, true
			}
			i++
		}
		i++
	} else if name == "dotenv" && i < len(argv) && argv[i] == "run" {
		i++
	}
	operands := 0
	for ; i < len(argv); i++ {
		a := argv[i]
		if k, v, ok := strings.Cut(a, "="); ok {
			if slices.Contains(rn.lines, k) {
				return r.line(v, depth+1, nil), true
			}
			if slices.Contains(rn.rest, k) {
				return r.argv(append([]string{v}, argv[i+1:]...), depth+1), true
			}
		}
		switch {
		case a == "--":
			if i+1 >= len(argv) {
				break
			}
			return r.argv(argv[i+1:], depth+1), true
		case slices.Contains(rn.lines, a):
			return i+1 < len(argv) && r.line(argv[i+1], depth+1, nil), true
		case slices.Contains(rn.rest, a):
			return r.argv(argv[i+1:], depth+1), true
		case slices.Contains(rn.values, a):
			i++
		case strings.HasPrefix(a, "-"):
		case rn.operands < 0 || operands < rn.operands:
			operands++
		default:
			return r.argv(argv[i:], depth+1), true
		}
	}
	// No command: nix-shell, nix shell and nix develop start a shell.
	return name == "nix-shell" || name == "nix", true
}

// wsl: with no command, the distribution's shell; -e runs a program,
// other words a line; its management options run nothing.
func (r *ireader) wsl(args []string, depth int) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-e", "--exec", "--":
			return i+1 < len(args) && r.argv(args[i+1:], depth+1)
		case "-d", "--distribution", "-u", "--user", "--cd", "--distribution-id":
			i++
		case "--shell-type", "--system":
		default:
			if strings.HasPrefix(a, "-") {
				return false // --list, --status, --install, --shutdown, …
			}
			return r.line(strings.Join(args[i:], " "), depth+1, nil)
		}
	}
	return true
}

// xargsValues are xargs's short options that take the next word.
const xargsValues = "aEIdLnPs"

// xargs reading the terminal runs its command with what is typed for
// arguments: a shell, eval, an interpreter or a wrapper runs it as code
// (xargs -L1 sh -c, xargs -I{} sh -c '{}'); -o gives the command the
// terminal.
func (r *ireader) xargs(args []string, depth int) bool {
	cmd, tty, fromFile := xargsCommandOf(args)
	if fromFile || len(cmd) == 0 {
		return false // its arguments come from a file; or echo
	}
	return r.xargsCommand(cmd, tty, depth)
}

func (r *ireader) xargsCommand(cmd []string, tty bool, depth int) bool {
	n := ProgramName(cmd[0])
	if shells[n] || interpreter(n) || n == "eval" || wrappers[n] || remoteRunners[n] || awks[n] || n == "cmd" {
		return true
	}
	return tty && r.argv(append(slices.Clip(cmd), xargsItem), depth+1)
}

// xargsItem stands for what xargs read, the arguments it appends to its
// command (xargs -o less: less on the files named).
const xargsItem = "xargs-item"

// parallel reading the terminal runs each line typed (no command), or
// passes it to a shell or an interpreter as code; ::: and -a give it
// its arguments instead.
func (r *ireader) parallel(args []string, depth int) bool {
	for _, a := range args {
		if a == ":::" || a == "::::" || a == ":::+" || a == "::::+" || a == "-a" || a == "--arg-file" {
			return false
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "-") && len(a) == 2 && strings.Contains("jSIEdNnLlPsC", a[1:]):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return r.xargsCommand(args[i:], false, depth)
		}
	}
	return true
}

// systemdRun: with --pty, --pipe or --shell, the unit's command gets the
// terminal (--shell: a shell); otherwise it runs as a service.
func (r *ireader) systemdRun(args []string, depth int) bool {
	tty := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-S" || a == "--shell":
			return true
		case a == "-t" || a == "--pty" || a == "-P" || a == "--pipe":
			tty = true
		case a == "-u" || a == "--unit" || a == "-p" || a == "--property" || a == "-E" || a == "--setenv" || a == "-M" ||
			a == "--machine" || a == "--uid" || a == "--gid" || a == "-H" || a == "--host" || a == "--description" ||
			a == "--slice" || a == "--nice" || a == "-d" || a == "--working-directory":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return tty && r.argv(args[i:], depth+1)
		}
	}
	return false
}

// containerInteractive: docker/podman exec or run with -i, whose command
// (for run with none, the image's own: fail closed) reads the terminal;
// attach; start -ai; compose exec and run attach stdin unless -d.
func (r *ireader) container(argv []string, depth int) bool {
	name := ProgramName(argv[0])
	sub, i := containerSubcommand(argv)
	compose := name == "docker-compose" || name == "podman-compose" || slices.Contains(argv[1:min(i, len(argv))], "compose")
	rest := argv[min(i+1, len(argv)):]
	switch sub {
	case "attach":
		return !slices.Contains(rest, "--no-stdin")
	case "start":
		a, in := false, false
		for _, w := range rest {
			switch {
			case w == "--attach" || w == "--attach=true":
				a = true
			case w == "--interactive" || w == "--interactive=true":
				in = true
			case strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--"):
				a = a || strings.Contains(w, "a")
				in = in || strings.Contains(w, "i")
			}
		}
		return a && in
	case "exec", "run":
		return r.containerRun(rest, sub == "run", compose, compose, "", maxBranches, depth)
	}
	return false
}

// containerRun reads run's or exec's options to the image, the
// container or the service, and the command after it.
func (r *ireader) containerRun(args []string, run, compose, stdin bool, entrypoint string, branches, depth int) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-d" || a == "--detach" || a == "--detach=true":
			return false
		case a == "-i" || a == "--interactive" || a == "--interactive=true":
			stdin = true
		case a == "--entrypoint" && i+1 < len(args):
			entrypoint = args[i+1]
			i++
		case strings.HasPrefix(a, "--entrypoint="):
			entrypoint = a[len("--entrypoint="):]
		case containerValueOptions[a]:
			i++
		case strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && !containerFlags[a] && !runnerFlags[a] && branches > 0:
			// An option this reading does not know: read both ways.
			if r.containerRun(args[min(i+2, len(args)):], run, compose, stdin, entrypoint, branches-1, depth) {
				return true
			}
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// A cluster of flags (-it, -dit), or a letter and its value
			// (-eA=1, -uroot).
			for k := 1; k < len(a); k++ {
				if strings.IndexByte("itdPqR", a[k]) < 0 {
					break
				}
				if a[k] == 'd' {
					return false
				}
				if a[k] == 'i' {
					stdin = true
				}
			}
		default:
			if !stdin {
				return false
			}
			cmd := args[i+1:]
			if entrypoint != "" {
				cmd = append(strings.Fields(entrypoint), cmd...)
			}
			if len(cmd) == 0 {
				return run // the image's own program (run), or the service's
			}
			return r.argv(cmd, depth+1)
		}
	}
	return false
}

// kubectlStdin reports whether a kubectl option gives the command the
// terminal: -i, --stdin, a cluster -it.
func kubectlStdin(a string) bool {
	return a == "--stdin" || a == "--stdin=true" || a == "-i=true" ||
		len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.Trim(a[1:], "itq") == "" && strings.Contains(a, "i")
}

// kubectl: exec, attach, run and debug with -i (its command, or the
// image's for run and debug); oc rsh and oc debug, which attach the
// terminal by default.
func (r *ireader) kubectl(name string, argv []string, depth int) bool {
	sub, at := kubectlSubcommandAt(argv)
	rest := argv[min(at+1, len(argv)):]
	cmd, after := []string(nil), false
	if dd := slices.Index(rest, "--"); dd >= 0 {
		cmd, rest, after = rest[dd+1:], rest[:dd], true
	}
	stdin := slices.ContainsFunc(rest, kubectlStdin)
	// kubectl edit, apply edit-last-applied, create --edit: the object
	// in KUBE_EDITOR, EDITOR or vi.
	if sub == "edit" || sub == "apply" && slices.Contains(rest, "edit-last-applied") ||
		slices.ContainsFunc(rest, func(a string) bool { return a == "--edit" || a == "--edit=true" }) {
		return r.editorIn(depth, "vi", "KUBE_EDITOR", "EDITOR")
	}
	switch sub {
	case "attach":
		return stdin
	case "run", "debug":
		if name == "oc" && sub == "debug" {
			stdin = true
		}
		if !stdin {
			return false
		}
		if len(cmd) == 0 {
			return true
		}
		return r.argv(cmd, depth+1)
	case "exec", "rsh":
		if sub == "rsh" {
			stdin = true
		}
		if !stdin {
			return false
		}
		if !after {
			// The old form: the pod, then the command.
			for i := 0; i < len(rest); i++ {
				switch a := rest[i]; {
				case a == "-c" || a == "--container" || a == "-n" || a == "--namespace" || a == "--context" ||
					a == "--kubeconfig" || a == "-f" || a == "--filename" || a == "--pod-running-timeout" ||
					a == "--shell" || a == "--timeout":
					i++
				case strings.HasPrefix(a, "-"):
				default:
					cmd = rest[i+1:]
					i = len(rest)
				}
			}
		}
		if len(cmd) == 0 {
			return sub == "rsh"
		}
		return r.argv(cmd, depth+1)
	}
	return false
}

// wrappedCommand is the command a wrapper's words run, nil for none.
func wrappedCommand(spec wrapSpec, args []string) []string {
	operands := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return nonEmpty(args[i+1:])
		case slices.Contains(spec.line, a), slices.Contains(spec.longValues, a):
			i++
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1 && operands == 0:
			if clusterTakesNext(a, spec.values) {
				i++
			}
		case spec.assigns && strings.Contains(a, "="):
		case operands < spec.operands:
			operands++
		default:
			return args[i:]
		}
	}
	return nil
}

func nonEmpty(a []string) []string {
	if len(a) == 0 {
		return nil
	}
	return a
}
