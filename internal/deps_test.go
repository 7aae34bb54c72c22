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
	"io"
	"os/exec"
	"slices"
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

// forbidden reports whether the core may not depend on the package at
// path, directly or not: the NATS client and server, HTTP, the logger and
// the file watcher all belong to the I/O side.
func forbidden(path string) bool {
	switch {
	case strings.HasPrefix(path, "github.com/nats-io/"),
		path == "net/http", strings.HasPrefix(path, "net/http/"),
		path == "github.com/rs/zerolog", strings.HasPrefix(path, "github.com/rs/zerolog/"),
		path == "github.com/fsnotify/fsnotify":
		return true
	}
	return false
}

type listed struct {
	ImportPath string
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
	for _, c := range core {
		p, ok := pkgs[module+c]
		if !ok {
			t.Errorf("%s: not listed by go list", c)
			continue
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
