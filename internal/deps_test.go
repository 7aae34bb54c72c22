// Package internal_test enforces the boundary docs/ARCHITECTURE.md draws
// between the pure decision core and the I/O around it, in the manner of
// the standard library's go/build/deps_test.go: the core is what replay,
// the rule tests and the rebuild of a tampered session run as the
// processor runs it, and it can only do that while it reads nothing but
// its arguments. A package that reached NATS, HTTP, the logger or the file
// watcher would no longer be that, so the dependency is a test failure,
// not a review comment.
//
// It also keeps internal/testkit out of the product: test support may
// fail a test, fake an attacker or start a server with test defaults, and
// a binary that linked it could do the same.
package internal_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/turnguard/turnguard/"

// core lists the packages of the pure decision core.
var core = []string{
	"internal/core/acs",
	"schema",
	"internal/core/turnstate",
	"internal/core/lineage",
	"internal/core/shellcmd",
	"internal/core/policy",
	"internal/core/guardian",
	"internal/core/alert",
	"internal/core/receipt",
}

// allowed lists, one by one, what a core package may import besides
// another core package: the standard library's pure packages and the
// libraries the core is built on. It is an allowlist, as the standard
// library's go/build/deps_test.go is: a new import fails this test until
// someone names it here, and os, crypto/rand, net, path/filepath, math/rand
// and the rest of the machine's I/O are not and must not be (notAllowed).
// Keys, files and the clock come in as arguments from the edges
// (internal/keyfile, rules.Load, the stream's timestamps).
var allowed = map[string]bool{
	// The standard library, pure.
	"bytes": true, "cmp": true, "embed": true, "errors": true, "fmt": true, "hash": true,
	"io": true, "io/fs": true, "maps": true, "math/big": true, "math/bits": true, "path": true,
	"reflect": true, "regexp": true, "slices": true, "strconv": true, "strings": true,
	"sync": true, "sync/atomic": true, "text/template": true, "time": true,
	"unicode": true, "unicode/utf8": true,
	"encoding": true, "encoding/base64": true, "encoding/binary": true, "encoding/hex": true,
	"encoding/json": true, "encoding/pem": true,
	// Cryptography that computes, and draws nothing from the machine:
	// signing and MACs over given keys, hashes, key encodings.
	"crypto/ed25519": true, "crypto/hkdf": true, "crypto/hmac": true, "crypto/sha256": true,
	"crypto/x509": true,
	// The libraries the core is built on.
	"cel.dev/cel-go/cel": true, "cel.dev/cel-go/common": true, "cel.dev/cel-go/common/ast": true,
	"cel.dev/cel-go/common/cost": true, "cel.dev/cel-go/common/types": true,
	"cel.dev/cel-go/ext": true, "cel.dev/cel-go/interpreter": true,
	"github.com/go-json-experiment/json/jsontext": true,
	"github.com/santhosh-tekuri/jsonschema/v6":    true,
	"go.yaml.in/yaml/v3":                          true,
	"golang.org/x/text/language":                  true,
	"golang.org/x/text/message":                   true,
	// Lineage folds compatibility forms (NFKC) before it tokenises, and
	// indexes an international host in both its spellings (UTS #46).
	"golang.org/x/text/unicode/norm": true,
	"golang.org/x/net/idna":          true,
	// An IP address read as a value (lineage: a URL's host); no sockets.
	"net/netip":             true,
	"mvdan.cc/sh/v3/syntax": true,
}

// notAllowed must never be in allowed: the file system, randomness, the
// network, processes and the clock's side of the machine.
var notAllowed = []string{
	"os", "os/exec", "os/signal", "path/filepath", "io/ioutil", "syscall",
	"crypto/rand", "math/rand", "math/rand/v2",
	"net", "net/http", "runtime/debug", "unsafe", "log",
}

// clockAndChance are the calls of allowed packages that still read the
// machine: the wall clock, timers, and key generation (which draws on
// crypto/rand inside crypto/ed25519). A core package may use time's types
// and ed25519's signatures, but not these.
var clockAndChance = map[string][]string{
	"time":           {"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"},
	"crypto/ed25519": {"GenerateKey"},
}

// forbidden reports whether the core may not depend on the package at
// path, directly or not — through a library it is allowed either: the
// NATS client and server, HTTP, processes, the logger and the file
// watcher all belong to the I/O side.
func forbidden(path string) bool {
	switch {
	case strings.HasPrefix(path, "github.com/nats-io/"),
		path == "net/http", strings.HasPrefix(path, "net/http/"),
		path == "os/exec",
		path == "github.com/rs/zerolog", strings.HasPrefix(path, "github.com/rs/zerolog/"),
		path == "github.com/fsnotify/fsnotify":
		return true
	}
	return false
}

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func TestCoreDependencies(t *testing.T) {
	args := []string{"list", "-deps", "-json=ImportPath,Imports,Deps"}
	for _, p := range core {
		args = append(args, module+p)
	}
	pkgs := map[string]listed{}
	for _, p := range goList(t, args...) {
		pkgs[p.ImportPath] = p
	}
	isCore := map[string]bool{}
	for _, c := range core {
		isCore[module+c] = true
	}
	for _, c := range core {
		p, ok := pkgs[module+c]
		if !ok {
			t.Errorf("%s: not listed by go list", c)
			continue
		}
		for _, imp := range p.Imports {
			if !allowed[imp] && !isCore[imp] {
				t.Errorf("%s imports %s, which the core's allowlist (internal/deps_test.go) does not name", c, imp)
			}
		}
		for _, d := range p.Deps {
			if forbidden(d) {
				t.Errorf("%s depends on %s: %s", c, d, strings.Join(importChain(pkgs, p.ImportPath, d), " → "))
			}
		}
	}
}

// testkit is the folder of the packages only tests may import.
const testkit = module + "internal/testkit/"

// TestProductImportsNoTestkit fails if a package of the module, other than
// test support itself, imports internal/testkit outside its tests: go list
// without -test reads the packages' non-test files only. Direct imports
// are enough: only the module's own packages can import an internal one.
func TestProductImportsNoTestkit(t *testing.T) {
	n := 0
	for _, p := range goList(t, "list", "-json=ImportPath,Imports", module+"...") {
		if strings.HasPrefix(p.ImportPath, testkit) {
			continue
		}
		n++
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, testkit) {
				t.Errorf("%s imports %s; only tests may", p.ImportPath, imp)
			}
		}
	}
	if n == 0 {
		t.Fatal("go list named no package outside internal/testkit")
	}
}

// goList runs the go command with args (a go list with -json) and returns
// the packages it lists; without a go command the test is skipped.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on the PATH")
	}
	var stderr bytes.Buffer
	cmd := exec.Command(goCmd, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

// importChain returns a shortest import path from 'from' to 'to', so that a
// failure names the import to remove rather than only its far end.
func importChain(pkgs map[string]listed, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var chain []string
			for p := cur; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range pkgs[cur].Imports {
			if _, seen := prev[next]; !seen {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	return []string{from, "…", to}
}

// TestCoreListIsTheCoreFolder: every package under internal/core is held
// to the core's rules, including one added later.
func TestCoreListIsTheCoreFolder(t *testing.T) {
	pkgs := goList(t, "list", "-json=ImportPath", module+"internal/core/...")
	if len(pkgs) == 0 {
		t.Fatal("go list found no package under internal/core")
	}
	for _, p := range pkgs {
		if !slices.Contains(core, strings.TrimPrefix(p.ImportPath, module)) {
			t.Errorf("%s is under internal/core but not in the core list of internal/deps_test.go", p.ImportPath)
		}
	}
}

// TestAllowlistExcludesTheMachine guards the allowlist itself: naming os or
// crypto/rand there would make TestCoreDependencies pass for a core that
// reads files or draws randomness.
func TestAllowlistExcludesTheMachine(t *testing.T) {
	for _, p := range notAllowed {
		if allowed[p] {
			t.Errorf("the core's allowlist names %s", p)
		}
	}
}

// TestCoreReadsNoClock fails when a core package's code calls what reads
// the wall clock or generates keys, though its package is allowed: replay
// must give the answer live processing gave, so time comes from the
// envelope and the stream, and keys from internal/keyfile.
func TestCoreReadsNoClock(t *testing.T) {
	args := []string{"list", "-json=ImportPath,Dir,GoFiles"}
	for _, p := range core {
		args = append(args, module+p)
	}
	files := 0
	for _, p := range goList(t, args...) {
		for _, name := range p.GoFiles {
			for _, call := range machineCalls(t, filepath.Join(p.Dir, name)) {
				t.Errorf("%s calls %s", call.pos, call.name)
			}
			files++
		}
	}
	if files < len(core) {
		t.Fatalf("read %d files of %d core packages: the check proves nothing", files, len(core))
	}
}

type machineCall struct{ pos, name string }

// machineCalls returns the uses of clockAndChance's functions in a file,
// through whatever name the file imports their package as.
func machineCalls(t *testing.T, path string) []machineCall {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{} // local name → import path
	for _, imp := range f.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		if _, watched := clockAndChance[ip]; !watched {
			continue
		}
		local := ip[strings.LastIndex(ip, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
		names[local] = ip
	}
	var out []machineCall
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		if pkg, ok := names[id.Name]; ok && slices.Contains(clockAndChance[pkg], sel.Sel.Name) {
			out = append(out, machineCall{fset.Position(sel.Pos()).String(), id.Name + "." + sel.Sel.Name})
		}
		return true
	})
	return out
}
