package shellcmd

import (
	"slices"
	"strings"
)

// Other programs that run a command on another machine, as ssh does:
// mosh, vagrant ssh -c, gcloud compute ssh --command, az ssh vm, and
// ssh's own arguments some of them pass on after a --.

// moshValueOptions are mosh's options that take the next word as their
// value (Getopt::Long also reads --port=N).
var moshValueOptions = map[string]bool{"-p": true, "--port": true, "--ssh": true, "--server": true, "--client": true,
	"--predict": true, "--family": true, "--bind-server": true, "--experimental-remote-ip": true}

// mosh adds the programs of the line mosh runs on its host (mosh HOST --
// CMD, mosh HOST CMD) and of the ssh command --ssh gives it, which runs
// here.
func (c *collector) mosh(argv []string, known []bool, depth int, in *input) {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--ssh" && i+1 < len(argv) && known[i+1]:
			c.line(argv[i+1], depth+1)
			i++
		case strings.HasPrefix(a, "--ssh=") && known[i]:
			c.line(a[len("--ssh="):], depth+1)
		case moshValueOptions[a]:
			i++
		case a == "--" && i+1 < len(argv):
			i++ // the host follows
			fallthrough
		case !strings.HasPrefix(a, "-"):
			j := i + 1
			if j < len(argv) && argv[j] == "--" {
				j++
			}
			c.remoteLine(argv[min(j, len(argv)):], known[min(j, len(argv)):], depth, nil)
			return
		}
	}
}

// sshArgs adds the programs of ssh's arguments that a cloud or VM CLI
// passes on after its -- (gcloud compute ssh VM -- -t 'curl …', az ssh vm
// … -- curl …): its options, and the line they give the host.
func (c *collector) sshArgs(argv []string, known []bool, depth int, in *input) {
	dd := slices.Index(argv, "--")
	switch {
	case dd < 0:
		return
	case depth >= maxDepth:
		c.tooDeep(argv[dd+1:])
		return
	}
	c.ssh(append([]string{"ssh", "host"}, argv[dd+1:]...), append([]bool{true, true}, known[dd+1:]...), depth+1, in)
}

// commandOption adds the line a command option gives a CLI to run on a
// machine (vagrant ssh -c '…', gcloud compute ssh --command='…'): its
// value read as a line, Unknown when it is not literal.
func (c *collector) commandOption(argv []string, known []bool, opts []string, depth int) {
	for i, a := range argv {
		for _, o := range opts {
			switch {
			case a == o && i+1 < len(argv):
				if !known[i+1] {
					c.add(Unknown)
				} else {
					c.line(argv[i+1], depth+1)
				}
			case strings.HasPrefix(o, "--") && strings.HasPrefix(a, o+"=") && known[i]:
				c.line(a[len(o)+1:], depth+1)
			}
		}
	}
}

// vmShell adds what a VM's or a cloud's CLI runs on a machine over ssh:
// vagrant ssh [-c CMD] [-- ssh's args], gcloud compute ssh (gcloud
// compute tpus tpu-vm ssh, gcloud cloud-shell ssh) [--command CMD] [--
// ssh's args], az ssh vm|arc [-- ssh's args].
func (c *collector) vmShell(name string, argv []string, known []bool, depth int, in *input) {
	sshAt := slices.Index(argv, "ssh")
	if sshAt < 0 {
		return
	}
	switch name {
	case "vagrant":
		if sshAt != 1 {
			return
		}
		c.commandOption(argv[2:], known[2:], []string{"-c", "--command"}, depth)
	case "gcloud":
		if !slices.Contains(argv[1:sshAt], "compute") && !slices.Contains(argv[1:sshAt], "cloud-shell") {
			return
		}
		c.commandOption(argv[sshAt+1:], known[sshAt+1:], []string{"--command"}, depth)
	case "az":
		if sshAt != 1 {
			return
		}
	default:
		return
	}
	c.sshArgs(argv[sshAt+1:], known[sshAt+1:], depth, in)
}
