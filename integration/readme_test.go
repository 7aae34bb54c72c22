//go:build linux

package integration

// TestREADMEWalkthrough runs the walkthrough (docs/WALKTHROUGH.md) and
// compares what its commands print with the samples it shows. The page
// marks the blocks it means with an HTML comment (invisible on GitHub) on
// the line just before a fenced block:
//
//	<!-- walkthrough: run -->            the block is shell, run in the
//	                                     walkthrough's shell (one bash for the
//	                                     whole README: variables, functions
//	                                     and exports carry over, as in a
//	                                     terminal); it must exit 0
//	<!-- walkthrough: output OPTS -->    the block is the output of the last
//	                                     `run` block
//	<!-- walkthrough: background NAME OPTS -->
//	                                     the block is shell started in the
//	                                     background as NAME (another
//	                                     terminal); a NAME still running is
//	                                     stopped first, as with Ctrl-C
//	<!-- walkthrough: output NAME OPTS -->
//	                                     the block is an excerpt of what
//	                                     background NAME has printed so far
//	<!-- walkthrough: transcript OPTS --> the block is a terminal transcript:
//	                                     lines starting "$ " are commands (a
//	                                     line ending in \ continues), the
//	                                     lines after one its output
//
// OPTS are key=value or key="value with spaces":
//
//	ready="TEXT"        background: started once its output shows TEXT
//	ready-consumers=S,… background: started once each of these streams has
//	                    one consumer more than before (replay tail says nothing)
//	from="TEXT"         output NAME: the excerpt starts at the line holding TEXT
//	until="TEXT"        output NAME: it ends before the line holding TEXT
//	wait="TEXT|TEXT"    output NAME: wait until a complete line after the
//	                    excerpt's start holds each TEXT (default: until, else
//	                    from) before reading
//	fold=N              lines longer than N are broken after a comma, the rest
//	                    on a line starting with one space; the comparison
//	                    joins them again
//	elide               "…" in the sample matches any text (a sample without
//	                    the option is compared as it stands)
//	unordered           the lines are compared as a set (two NATS consumers
//	                    print in whatever order their messages arrive)
//
// Before each command and each excerpt the test waits until the processor
// has decided everything published (its consumers have nothing pending or
// unacknowledged), as a person typing the next command would have.
//
// What differs from run to run is normalised, in the real output before
// comparison and so in the samples: the README's loopback ports (4222,
// 8787, 9464) stand for free ones the test picks; a UUID that none of
// examples/ carries (a session made with /proc/sys/kernel/random/uuid) is
// 00000000-0000-4000-8000-00000000000N, N counting new ids from 1 in the
// order they appear (and its short form 00000000…000N); Ed25519 receipts
// and key ids are <receipt> and <key-id>; state MACs <mac>; hashes (chain,
// entry and request hashes, sha256:… policy revisions) <hash>; RFC 3339
// times <timestamp>, clock times hh:mm:ss, durations <duration>; and the
// headers the nats CLI prints for a message (in a Go map's random order)
// are sorted.
//
// `go test ./integration -run TestREADME -update` (or
// TURNGUARD_UPDATE_README=1) rewrites the samples from the real output: a
// sample with elisions that still matches is kept, any other is replaced
// whole.
//
// The commands run as the README says, in a directory of their own holding
// examples/ and the processor's ./data, with `go run ./cmd/NAME` and
// `go run ./examples/client` running binaries built from this tree, and the
// nats CLI from TURNGUARD_NATS_CLI_BIN or the PATH (skipped without one,
// unless TURNGUARD_REQUIRE_NATS_CLI=1). Nothing leaves loopback.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/turnguard/turnguard/internal/testkit/syncbuf"
	"github.com/turnguard/turnguard/internal/testkit/testwait"
)

// walkthroughFiles are the pages whose marked blocks the walkthrough test
// runs, in this order, in one shell: the walkthrough (the README's until
// the README became the front door), the metrics demo of the operating
// guide, and the README's own "guard your agent" steps.
var walkthroughFiles = []string{"docs/WALKTHROUGH.md", "docs/OPERATING.md", "README.md"}

var updateREADME = flag.Bool("update", false, "rewrite the README's walkthrough samples from the real output")

// readmePorts are the loopback ports the README names; the test runs on
// free ones instead and maps them back in what it compares.
var readmePorts = []string{"4222", "8787", "9464"}

// wtStep is one marked block of the README.
type wtStep struct {
	kind    string // run, output, background, transcript
	name    string // background and output: the background's name
	opts    map[string]string
	section string // the heading above it, for messages
	file    string // the page it is on
	line    int    // 1-based line of the marker
	// start and end are the indices (0-based, into the README's lines) of
	// the block's content: lines[start:end], fences excluded.
	start, end int
	body       string
}

func (s wtStep) where() string { return fmt.Sprintf("%s:%d (%s)", s.file, s.line, s.section) }

var (
	markerRE = regexp.MustCompile(`^<!-- walkthrough: (\w+)(.*?) -->$`)
	optRE    = regexp.MustCompile(`\s*([\w-]+)(?:=("([^"]*)"|\S+))?`)
)

// parseWalkthrough finds the marked blocks of a README.
func parseWalkthrough(file string, lines []string) ([]wtStep, error) {
	var steps []wtStep
	section := ""
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "#") {
			section = strings.TrimLeft(lines[i], "# ")
		}
		m := markerRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		s := wtStep{kind: m[1], opts: map[string]string{}, section: section, file: file, line: i + 1}
		rest := m[2]
		for _, o := range optRE.FindAllStringSubmatch(rest, -1) {
			switch {
			case o[2] == "" && (s.kind == "background" || s.kind == "output") && s.name == "" && len(s.opts) == 0 && !knownOpt(o[1]):
				s.name = o[1]
			case !knownOpt(o[1]):
				return nil, fmt.Errorf("%s:%d: unknown option %q", file, i+1, o[1])
			case o[3] != "":
				s.opts[o[1]] = o[3]
			default:
				s.opts[o[1]] = o[2]
			}
		}
		switch s.kind {
		case "run", "output", "transcript":
		case "background":
			if s.name == "" {
				return nil, fmt.Errorf("%s:%d: a background needs a name", file, i+1)
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown walkthrough marker %q", file, i+1, s.kind)
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return nil, fmt.Errorf("%s:%d: a walkthrough marker must be followed by a fenced block", file, i+1)
		}
		s.start = i + 2
		s.end = s.start
		for s.end < len(lines) && lines[s.end] != "```" {
			s.end++
		}
		if s.end == len(lines) {
			return nil, fmt.Errorf("%s:%d: unterminated block", file, i+1)
		}
		s.body = strings.Join(lines[s.start:s.end], "\n")
		steps = append(steps, s)
		i = s.end
	}
	return steps, nil
}

func knownOpt(k string) bool {
	switch k {
	case "ready", "ready-consumers", "from", "until", "wait", "fold", "elide", "unordered":
		return true
	}
	return false
}

// transcriptEntry is one command of a transcript block and the output shown
// after it; first and last index the block's lines of that output.
type transcriptEntry struct {
	command     string
	output      []string
	first, last int
}

func parseTranscript(body string) ([]transcriptEntry, error) {
	var out []transcriptEntry
	lines := strings.Split(body, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "$ ") {
			if len(out) == 0 {
				return nil, fmt.Errorf("transcript line %d: output before the first command", i+1)
			}
			out[len(out)-1].output = append(out[len(out)-1].output, l)
			out[len(out)-1].last = i + 1
			continue
		}
		cmd := strings.TrimPrefix(l, "$ ")
		for strings.HasSuffix(l, `\`) && i+1 < len(lines) {
			i++
			l = lines[i]
			cmd += "\n" + l
		}
		out = append(out, transcriptEntry{command: cmd, first: i + 1, last: i + 1})
	}
	return out, nil
}

// --- normalisation -----------------------------------------------------------

type normaliser struct {
	known map[string]bool   // UUIDs examples/ carries
	ids   map[string]string // other UUIDs → placeholders
	ports map[string]string // real port → README port
}

var (
	uuidRE      = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	shortIDRE   = regexp.MustCompile(`\b[0-9a-f]{8}…[0-9a-f]{4}\b`)
	receiptRE   = regexp.MustCompile(`(?m)^(Acs-Receipt: ).+$`)
	receiptKey  = regexp.MustCompile(`(?m)^(Acs-Receipt-Key: ).+$`)
	macRE       = regexp.MustCompile(`"mac":"[^"]*"`)
	hashKeyRE   = regexp.MustCompile(`"(chain_hash|chain_head|entry_hash|request_hash|prev_hash)":"[^"]*"`)
	sha256RE    = regexp.MustCompile(`sha256:[0-9a-f]{8,}(…)?`)
	hexRE       = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	rfc3339RE   = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	clockRE     = regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`)
	durationRE  = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms)\b|\b\d+\.\d+s\b`)
	goTimeRE    = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4} \w+( \([^)]*\))?`)
	epochMsRE   = regexp.MustCompile(`"(\w*time)":\d{12,}`)
	inboxRE     = regexp.MustCompile(`"_INBOX\.[^"]*"`)
	natsMsgHead = regexp.MustCompile(`^\[#\d+\] Received on `)
)

func (n *normaliser) normalise(s string) string {
	for real, readme := range n.ports {
		s = strings.ReplaceAll(s, "127.0.0.1:"+real, "127.0.0.1:"+readme)
		s = strings.ReplaceAll(s, "localhost:"+real, "localhost:"+readme)
	}
	s = uuidRE.ReplaceAllStringFunc(s, n.placeholder)
	s = shortIDRE.ReplaceAllStringFunc(s, func(short string) string {
		for id, ph := range n.ids {
			if id[:8]+"…"+id[len(id)-4:] == short {
				return ph[:8] + "…" + ph[len(ph)-4:]
			}
		}
		return short
	})
	s = receiptRE.ReplaceAllString(s, "${1}<receipt>")
	s = receiptKey.ReplaceAllString(s, "${1}<key-id>")
	s = macRE.ReplaceAllString(s, `"mac":"<mac>"`)
	s = hashKeyRE.ReplaceAllString(s, `"$1":"<hash>"`)
	s = sha256RE.ReplaceAllString(s, "sha256:<hash>")
	s = hexRE.ReplaceAllString(s, "<hash>")
	s = inboxRE.ReplaceAllString(s, `"_INBOX.<inbox>"`)
	s = epochMsRE.ReplaceAllString(s, `"$1":<epoch-ms>`)
	s = goTimeRE.ReplaceAllString(s, "<timestamp>")
	s = rfc3339RE.ReplaceAllString(s, "<timestamp>")
	s = clockRE.ReplaceAllString(s, "hh:mm:ss")
	s = durationRE.ReplaceAllString(s, "<duration>")
	return sortNATSHeaders(s)
}

func (n *normaliser) placeholder(id string) string {
	if n.known[id] {
		return id
	}
	if ph, ok := n.ids[id]; ok {
		return ph
	}
	ph := fmt.Sprintf("00000000-0000-4000-8000-%012d", len(n.ids)+1)
	n.ids[id] = ph
	return ph
}

// sortNATSHeaders sorts the header lines the nats CLI prints after
// "[#N] Received on …" (sub) and "Headers:" (stream get): it ranges over a
// Go map to print them.
func sortNATSHeaders(s string) string {
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		if !natsMsgHead.MatchString(lines[i]) && lines[i] != "Headers:" {
			continue
		}
		j := i + 1
		for j < len(lines) && lines[j] != "" && strings.Contains(lines[j], ": ") && !strings.HasPrefix(lines[j], "{") {
			j++
		}
		slices.Sort(lines[i+1 : j])
		i = j
	}
	return strings.Join(lines, "\n")
}

// fold breaks lines longer than width after a comma (not one followed by a
// space), continuing on a line that starts with one space.
func fold(s string, width int) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		prefix := ""
		for len([]rune(prefix+line)) > width {
			r := []rune(line)
			// The last comma that fits, else (a long string) the first
			// one after it.
			cut := -1
			for k := 0; k < len(r)-1; k++ {
				if r[k] != ',' || r[k+1] == ' ' {
					continue
				}
				if len([]rune(prefix))+k+1 <= width || cut < 0 {
					cut = k + 1
				}
				if len([]rune(prefix))+k+1 > width {
					break
				}
			}
			if cut <= 0 {
				break
			}
			b.WriteString(prefix + string(r[:cut]) + "\n")
			line = string(r[cut:])
			prefix = " "
		}
		b.WriteString(prefix + line)
	}
	return b.String()
}

// unfold undoes fold: a line starting with one space continues the one
// before.
func unfold(s string) string {
	lines := strings.Split(s, "\n")
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, " ") && len(out) > 0 {
			out[len(out)-1] += l[1:]
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// trimOutput drops trailing space on each line and blank lines at either
// end: terminals do not show them.
func trimOutput(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// matches reports whether a sample stands for the normalised real output
// under a step's options.
func matches(sample, actual string, opts map[string]string) bool {
	if _, ok := opts["fold"]; ok {
		sample, actual = unfold(sample), unfold(actual)
	}
	if _, ok := opts["unordered"]; ok {
		a, b := strings.Split(sample, "\n"), strings.Split(actual, "\n")
		if len(a) != len(b) {
			return false
		}
		slices.Sort(a)
		slices.Sort(b)
		sample, actual = strings.Join(a, "\n"), strings.Join(b, "\n")
	}
	if _, ok := opts["elide"]; !ok {
		return sample == actual
	}
	parts := strings.Split(sample, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re, err := regexp.Compile(`^(?s:` + strings.Join(parts, `.*?`) + `)$`)
	return err == nil && re.MatchString(actual)
}

// render is what update writes for a real output: folded as the step asks.
func render(actual string, opts map[string]string) string {
	if w, ok := opts["fold"]; ok {
		n, err := strconv.Atoi(w)
		if err == nil {
			return fold(actual, n)
		}
	}
	return actual
}

// lineDiff is a small LCS diff of two texts, "-" for the README, "+" for the
// run.
func lineDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var d strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			d.WriteString("  " + a[i] + "\n")
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			d.WriteString("+ " + b[j] + "\n")
			j++
		default:
			d.WriteString("- " + a[i] + "\n")
			i++
		}
	}
	return d.String()
}

// --- running -----------------------------------------------------------------

// wtShell is the walkthrough's terminal: one bash, fed a block at a time.
type wtShell struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *syncbuf.Buffer
	done chan struct{}
	n    int
	read int // how much of out earlier blocks consumed
}

const wtSentinel = "__walkthrough_done__"

func (sh *wtShell) run(script string, within time.Duration) (string, int, error) {
	sh.n++
	end := fmt.Sprintf("%s %d ", wtSentinel, sh.n)
	// Commands read /dev/null, not the rest of this script; variables set
	// in the braces stay set for later blocks.
	if _, err := fmt.Fprintf(sh.in, "{\n%s\n} </dev/null 2>&1; printf '\\n%s%%d\\n' $?\n", script, end); err != nil {
		return "", 0, fmt.Errorf("write to the shell: %w", err)
	}
	var out string
	code := -1
	errExited := errors.New("the shell exited")
	err := testwait.Wait(within, 20*time.Millisecond, func() error {
		all := sh.out.String()
		out = all[sh.read:]
		if k := strings.Index(all[sh.read:], end); k >= 0 {
			rest := all[sh.read+k+len(end):]
			if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
				var err error
				code, err = strconv.Atoi(rest[:nl])
				out = all[sh.read : sh.read+k]
				sh.read += k + len(end) + nl + 1
				if err != nil {
					return fmt.Errorf("%w: %w", testwait.ErrStop, err)
				}
				return nil
			}
		}
		if isDone(sh.done) {
			return fmt.Errorf("%w: %w", testwait.ErrStop, errExited)
		}
		return errors.New("not finished")
	})
	if err != nil {
		return out, -1, err
	}
	return out, code, nil
}

// wtBackground is a block running in another terminal.
type wtBackground struct {
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	done chan struct{}
}

// interrupt is Ctrl-C in its terminal: SIGINT to its process group.
func (b *wtBackground) interrupt(t *testing.T) {
	t.Helper()
	select {
	case <-b.done:
		return
	default:
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-b.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
		t.Errorf("background %v: no exit within 20s of SIGINT\n%s", b.cmd.Args, b.out)
	}
}

type walkthrough struct {
	t       *testing.T
	dir     string // the commands' working directory
	prelude string // sourced by every shell
	env     []string
	portMap map[string]string // README port → real port
	norm    *normaliser
	shell   *wtShell
	bg      map[string]*wtBackground
	natsURL string
	js      jetstream.JetStream
	update  bool
}

func (w *walkthrough) script(s string) string {
	for readme, real := range w.portMap {
		s = strings.ReplaceAll(s, "127.0.0.1:"+readme, "127.0.0.1:"+real)
		s = strings.ReplaceAll(s, "localhost:"+readme, "localhost:"+real)
	}
	return s
}

// settle waits until the processor has decided everything published so
// far: every consumer of ACS_HOOKS it owns has nothing pending or
// unacknowledged. Without a processor (none started yet, or its
// credentials not written) there is nothing to wait for.
func (w *walkthrough) settle() {
	t := w.t
	t.Helper()
	creds := filepath.Join(w.dir, "data", "creds", "admin.creds")
	if _, err := os.Stat(creds); err != nil {
		return
	}
	if p, ok := w.bg["processor"]; !ok || isDone(p.done) {
		return
	}
	js := w.admin()
	poll(t, 30*time.Second, "the processor deciding everything published", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, "ACS_HOOKS")
		if err != nil {
			return false
		}
		l := s.ListConsumers(ctx)
		n := 0
		for ci := range l.Info() {
			if !strings.HasPrefix(ci.Name, "turnguard-") {
				continue
			}
			n++
			if ci.NumPending > 0 || ci.NumAckPending > 0 {
				return false
			}
		}
		return l.Err() == nil && n > 0
	})
}

// consumers counts a stream's consumers, or -1 when it cannot be read.
func (w *walkthrough) consumers(stream string) int {
	js := w.admin()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return -1
	}
	info, err := s.Info(ctx)
	if err != nil {
		return -1
	}
	return info.State.Consumers
}

// admin is the test's own connection, as admin, for settle and readiness;
// made once the processor wrote the credential, and reconnecting across the
// processor's restarts (the data dir, so the credential, stays).
func (w *walkthrough) admin() jetstream.JetStream {
	if w.js == nil {
		nc := connectAs(w.t, w.natsURL, filepath.Join(w.dir, "data", "creds", "admin.creds"), nats.MaxReconnects(-1))
		js, err := jetstream.New(nc)
		if err != nil {
			w.t.Fatal(err)
		}
		w.js = js
	}
	return w.js
}

func isDone(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (w *walkthrough) background(s wtStep) {
	t := w.t
	t.Helper()
	if old, ok := w.bg[s.name]; ok {
		old.interrupt(t)
	}
	before := map[string]int{}
	var streams []string
	if v := s.opts["ready-consumers"]; v != "" {
		streams = strings.Split(v, ",")
		for _, st := range streams {
			before[st] = w.consumers(st)
		}
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", ". "+w.prelude+"\n"+w.script(s.body))
	cmd.Dir, cmd.Env = w.dir, w.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	b := &wtBackground{cmd: cmd, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = b.out, b.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: start: %v", s.where(), err)
	}
	go func() {
		_ = cmd.Wait()
		close(b.done)
	}()
	w.bg[s.name] = b
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-b.done
		if t.Failed() {
			out := b.out.String()
			if len(out) > 8000 {
				out = "…" + out[len(out)-8000:]
			}
			t.Logf("background %s (%s) printed:\n%s", s.name, s.where(), out)
		}
	})
	testwait.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		ready := true
		if r := s.opts["ready"]; r != "" && !strings.Contains(b.out.String(), r) {
			ready = false
		}
		for _, st := range streams {
			if ready && w.consumers(st) <= before[st] {
				ready = false
			}
		}
		if ready {
			return nil
		}
		if isDone(b.done) {
			t.Fatalf("%s: background %s exited:\n%s", s.where(), s.name, b.out)
		}
		return fmt.Errorf("%s: background %s not ready:\n%s", s.where(), s.name, b.out)
	})
}

// excerpt waits for a background's output to hold what the step names and
// returns the lines the step selects.
func (w *walkthrough) excerpt(s wtStep) string {
	t := w.t
	t.Helper()
	b, ok := w.bg[s.name]
	if !ok {
		t.Fatalf("%s: no background %q", s.where(), s.name)
	}
	wait := s.opts["wait"]
	if wait == "" {
		wait = s.opts["until"]
	}
	if wait == "" {
		wait = s.opts["from"]
	}
	// Each awaited text must be on a complete line after the excerpt's
	// start: the nats CLI prints a message's header line, headers and body
	// with separate writes.
	complete := func() bool {
		out := b.out.String()
		if f := s.opts["from"]; f != "" {
			k := strings.Index(out, f)
			if k < 0 {
				return false
			}
			out = out[k:]
		}
		for _, w := range strings.Split(wait, "|") {
			k := strings.Index(out, w)
			if k < 0 || !strings.Contains(out[k:], "\n") {
				return false
			}
		}
		return true
	}
	testwait.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if wait == "" || complete() {
			return nil
		}
		return fmt.Errorf("%s: background %s printed no %q:\n%s", s.where(), s.name, wait, b.out)
	})
	lines := strings.Split(b.out.String(), "\n")
	first, last := 0, len(lines)
	if f := s.opts["from"]; f != "" {
		first = slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, f) })
	}
	if u := s.opts["until"]; u != "" {
		if k := slices.IndexFunc(lines[first:], func(l string) bool { return strings.Contains(l, u) }); k >= 0 {
			last = first + k
		}
	}
	return strings.Join(lines[first:last], "\n")
}

// compare checks a real output against a sample. It returns what the
// sample should become: the sample itself when it stands for the output,
// else the output rendered as the step asks (which update writes and which
// otherwise fails the test).
func (w *walkthrough) compare(s wtStep, what, sample, real string) string {
	t := w.t
	t.Helper()
	actual := trimOutput(w.norm.normalise(real))
	if matches(trimOutput(sample), actual, s.opts) {
		return sample
	}
	rendered := render(actual, s.opts)
	if !w.update {
		hint := ""
		if _, ok := s.opts["elide"]; ok {
			hint = " (an elided one: … in it matches any text)"
		}
		t.Errorf("%s: %s: the output differs from the README's sample%s (- README, + run; -update rewrites it):\n%s",
			s.where(), what, hint, lineDiff(trimOutput(sample), rendered))
	}
	return rendered
}

// wtEdit replaces lines[start:end] of the README.
type wtEdit struct {
	file       string
	start, end int
	text       string
}

// run plays the steps in order and returns the samples that differ.
func (w *walkthrough) run(steps []wtStep) []wtEdit {
	t := w.t
	var edits []wtEdit
	edit := func(s wtStep, text string) {
		if text != s.body {
			edits = append(edits, wtEdit{s.file, s.start, s.end, text})
		}
	}
	var last struct {
		step wtStep
		out  string
	}
	for _, s := range steps {
		switch s.kind {
		case "run":
			w.settle()
			out, code, err := w.shell.run(w.script(s.body), 2*time.Minute)
			if err != nil || code != 0 {
				t.Fatalf("%s: %v (exit %d):\n%s", s.where(), err, code, out)
			}
			last.step, last.out = s, out
		case "background":
			w.settle()
			w.background(s)
		case "output":
			if s.name != "" {
				w.settle()
				edit(s, w.compare(s, "background "+s.name, s.body, w.excerpt(s)))
				continue
			}
			if last.step.kind != "run" {
				t.Fatalf("%s: an output block follows no run block", s.where())
			}
			edit(s, w.compare(s, strings.SplitN(last.step.body, "\n", 2)[0], s.body, last.out))
		case "transcript":
			entries, err := parseTranscript(s.body)
			if err != nil {
				t.Fatalf("%s: %v", s.where(), err)
			}
			var rebuilt []string
			for _, e := range entries {
				w.settle()
				out, code, err := w.shell.run(w.script(e.command), 2*time.Minute)
				if err != nil || code != 0 {
					t.Fatalf("%s: $ %s: %v (exit %d):\n%s", s.where(), e.command, err, code, out)
				}
				rebuilt = append(rebuilt, "$ "+e.command)
				if got := w.compare(s, "$ "+strings.SplitN(e.command, "\n", 2)[0], strings.Join(e.output, "\n"), out); got != "" {
					rebuilt = append(rebuilt, got)
				}
			}
			edit(s, strings.Join(rebuilt, "\n"))
		}
	}
	for name, b := range w.bg {
		b.interrupt(t)
		delete(w.bg, name)
	}
	return edits
}

// natsCLI finds the nats CLI, or skips (fails, when CI requires it).
func natsCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TURNGUARD_NATS_CLI_BIN"); p != "" {
		return p
	}
	if p, err := exec.LookPath("nats"); err == nil {
		return p
	}
	msg := "no nats CLI: set TURNGUARD_NATS_CLI_BIN or put nats on the PATH (go install github.com/nats-io/natscli/nats@v0.5.0)"
	if os.Getenv("TURNGUARD_REQUIRE_NATS_CLI") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// newWalkthrough makes the reader's machine: a working directory with
// examples/ and nothing else, a HOME of its own (the nats CLI's contexts),
// a PATH with nats and the tree's binaries, free ports, and the shell.
func newWalkthrough(t *testing.T, root, nats string, update bool) *walkthrough {
	t.Helper()
	tmp := t.TempDir()
	tools := filepath.Join(tmp, "bin")
	work := filepath.Join(tmp, "work")
	home := filepath.Join(tmp, "home")
	for _, d := range []string{tools, work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{filepath.Join(tools, "nats"): nats, filepath.Join(work, "examples"): filepath.Join(root, "examples")}
	for _, b := range []string{"processor", "replay", "loadgen"} {
		links[filepath.Join(tools, b)] = filepath.Join(bin, b)
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(tools, "client"), "./examples/client")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples/client: %v\n%s", err, out)
	}
	sourcesNoted.Do(func() {
		if err := noteSources(".."); err != nil {
			t.Fatal(err)
		}
	})

	portMap, back := map[string]string{}, map[string]string{}
	ports := distinctPorts(t, len(readmePorts))
	for i, p := range readmePorts {
		real := strconv.Itoa(ports[i])
		portMap[p], back[real] = real, p
	}
	// `go run ./cmd/NAME` and `go run ./examples/client` run the binaries
	// built from this tree; the processor's NATS listens where the test
	// says (the README's default, 127.0.0.1:4222, may be taken).
	prelude := filepath.Join(tmp, "prelude.sh")
	pre := fmt.Sprintf(`go() {
	case "$1 $2" in
	"run ./cmd/"*|"run ./examples/client") ;;
	*) echo "walkthrough: only go run ./cmd/NAME and ./examples/client run here: go $*" >&2; return 127 ;;
	esac
	local name=${2##*/}; shift 2
	case $name in
	processor) TURNGUARD_LISTEN=127.0.0.1:%s "$TG_BIN/processor" "$@" ;;
	*) "$TG_BIN/$name" "$@" ;;
	esac
}
`, portMap["4222"])
	if err := os.WriteFile(prelude, []byte(pre), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + tools + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"TG_BIN=" + tools, "LANG=C.UTF-8", "TZ=UTC", "NO_COLOR=1", "TERM=dumb",
	}

	// The examples' own ids are shown as they are; ids made at run time
	// become placeholders.
	known := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".json" {
			return err
		}
		b, err := os.ReadFile(p)
		for _, id := range uuidRE.FindAllString(string(b), -1) {
			known[id] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	w := &walkthrough{
		t: t, dir: work, prelude: prelude, env: env, portMap: portMap,
		norm:    &normaliser{known: known, ids: map[string]string{}, ports: back},
		bg:      map[string]*wtBackground{},
		natsURL: "nats://127.0.0.1:" + portMap["4222"], update: update,
	}
	sh := exec.Command("bash", "--noprofile", "--norc")
	sh.Dir, sh.Env = work, env
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.shell = &wtShell{cmd: sh, in: in, out: &syncbuf.Buffer{}, done: make(chan struct{})}
	sh.Stdout, sh.Stderr = w.shell.out, w.shell.out
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = sh.Wait()
		close(w.shell.done)
	}()
	t.Cleanup(func() {
		in.Close()
		_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
		<-w.shell.done
	})
	if _, code, err := w.shell.run(". "+prelude, 10*time.Second); err != nil || code != 0 {
		t.Fatalf("prelude: %v (exit %d)", err, code)
	}
	return w
}

func TestREADMEWalkthrough(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the walkthrough reads /proc/sys/kernel/random/uuid")
	}
	nats := natsCLI(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the walkthrough needs curl")
	}
	update := *updateREADME || os.Getenv("TURNGUARD_UPDATE_README") == "1"
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string][]string{}
	var steps []wtStep
	for _, file := range walkthroughFiles {
		raw, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		pages[file] = strings.Split(string(raw), "\n")
		s, err := parseWalkthrough(file, pages[file])
		if err != nil {
			t.Fatal(err)
		}
		if len(s) == 0 {
			t.Fatalf("%s marks no walkthrough blocks", file)
		}
		steps = append(steps, s...)
	}

	edits := newWalkthrough(t, root, nats, update).run(steps)
	if !update || len(edits) == 0 || t.Failed() {
		return
	}
	// From the bottom up, so that earlier indices stay valid.
	for _, e := range slices.Backward(edits) {
		pages[e.file] = slices.Replace(pages[e.file], e.start, e.end, strings.Split(e.text, "\n")...)
	}
	for _, file := range walkthroughFiles {
		if err := os.WriteFile(filepath.Join(root, file), []byte(strings.Join(pages[file], "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("rewrote %d README sample(s)", len(edits))
}

// TestREADMEWalkthroughHelpers pins the marker syntax, the normalisation and
// the comparison the walkthrough test relies on, without running anything.
func TestREADMEWalkthroughHelpers(t *testing.T) {
	t.Run("markers", func(t *testing.T) {
		readme := strings.Split("## A\n<!-- walkthrough: background subs ready=\"Subscribing on\" -->\n```sh\nnats sub x\n```\n"+
			"<!-- walkthrough: output subs from=\"[#2] \" until=\"[#3] \" fold=100 elide -->\n```\nout\nmore\n```\n", "\n")
		steps, err := parseWalkthrough("test.md", readme)
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != 2 || steps[0].kind != "background" || steps[0].name != "subs" || steps[0].opts["ready"] != "Subscribing on" ||
			steps[1].name != "subs" || steps[1].opts["from"] != "[#2] " || steps[1].opts["fold"] != "100" || steps[1].body != "out\nmore" ||
			steps[1].section != "A" {
			t.Fatalf("parsed %+v", steps)
		}
		for _, bad := range []string{"<!-- walkthrough: teleport -->\n```\n```", "<!-- walkthrough: run -->\ntext", "<!-- walkthrough: run colour=red -->\n```\n```"} {
			if _, err := parseWalkthrough("test.md", strings.Split(bad, "\n")); err == nil {
				t.Errorf("%q parsed", bad)
			}
		}
	})
	t.Run("transcript", func(t *testing.T) {
		e, err := parseTranscript("$ a() { x \\\n  y; }\n$ a\nout 1\nout 2\n$ b")
		if err != nil {
			t.Fatal(err)
		}
		if len(e) != 3 || e[0].command != "a() { x \\\n  y; }" || len(e[0].output) != 0 || strings.Join(e[1].output, "|") != "out 1|out 2" || e[2].command != "b" {
			t.Fatalf("parsed %+v", e)
		}
	})
	n := &normaliser{known: map[string]bool{"3b9d6f2e-8c41-4e7a-b5d0-9a2c4e6f8b13": true}, ids: map[string]string{}, ports: map[string]string{"41234": "4222"}}
	for _, tc := range []struct{ in, want string }{
		{"nats://127.0.0.1:41234", "nats://127.0.0.1:4222"},
		{"3b9d6f2e-8c41-4e7a-b5d0-9a2c4e6f8b13 6b102c64-1111-4222-8333-444455556666 6b102c64…6666 6b102c64-1111-4222-8333-444455556666",
			"3b9d6f2e-8c41-4e7a-b5d0-9a2c4e6f8b13 00000000-0000-4000-8000-000000000001 00000000…0001 00000000-0000-4000-8000-000000000001"},
		{"Acs-Receipt: abc==\nAcs-Receipt-Key: 2949fbff9ced4f19", "Acs-Receipt: <receipt>\nAcs-Receipt-Key: <key-id>"},
		{`{"mac":"x1","chain_hash":"ab","v":"sha256:ad92c434e718f0c7","time":1796318236000}`, `{"mac":"<mac>","chain_hash":"<hash>","v":"sha256:<hash>","time":<epoch-ms>}`},
		{`16:57:22 at "2026-12-03T16:57:22.5Z" took 12.5ms`, `hh:mm:ss at "<timestamp>" took <duration>`},
		{`received 2026-12-03 17:16:54.39 +0000 UTC (12ms) on`, `received <timestamp> on`},
		{"[#1] Received on \"x\" with reply \"_INBOX.a.b\"\nB: 2\nA: 1\n\n{}", "[#1] Received on \"x\" with reply \"_INBOX.<inbox>\"\nA: 1\nB: 2\n\n{}"},
	} {
		if got := n.normalise(tc.in); got != tc.want {
			t.Errorf("normalise(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := `{"a":"` + strings.Repeat("x", 120) + `","b":1,"c":[1,2,3],"d":"e, f"}`
	if f := fold(long, 20); unfold(f) != long || !strings.Contains(f, "\n ") {
		t.Errorf("fold does not round-trip:\n%s", f)
	}
	for _, tc := range []struct {
		sample, actual string
		opts           map[string]string
		want           bool
	}{
		{"a\nb", "a\nb", nil, true},
		{"a…", "a b c", nil, false},
		{"a…c", "a b c", map[string]string{"elide": ""}, true},
		{"a…d", "a b c", map[string]string{"elide": ""}, false},
		{"b\na", "a\nb", map[string]string{"unordered": ""}, true},
		{`{"a":1,` + "\n" + ` "b":2}`, `{"a":1,"b":2}`, map[string]string{"fold": "8"}, true},
	} {
		if got := matches(tc.sample, tc.actual, tc.opts); got != tc.want {
			t.Errorf("matches(%q, %q, %v) = %v", tc.sample, tc.actual, tc.opts, got)
		}
	}
}
