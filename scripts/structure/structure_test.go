// Package structure_test holds the module to its shape
// (docs/design/testing.md), as measures anyone can repeat: the rooms
// (the top folders) import only rooms on a lower floor, and inside the
// platform and display rooms no package's files refer to each other in a
// circle, so each package reads from its bottom file (the types) up to
// its top (what wires them together).
package structure_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// floors are the rooms by floor: a package may import its own room and
// rooms on lower floors, never one on its own floor or above.
var floors = map[string]int{
	"platform": 0,
	"display":  1, "services": 1, "control": 1,
	"agent":   2,
	"scripts": 3, "clients": 3, "docs": 3, "packaging": 3,
}

// listed is what `go list -json` says of a package.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	ImportMap  map[string]string
	Export     string
	Standard   bool
}

// goList runs `go list -json` with args in the module's root.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's answer: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// room is the top folder of a deckhand package ("" for another module's).
func room(importPath string) string {
	rest, ok := strings.CutPrefix(importPath, "deckhand/")
	if !ok {
		return ""
	}
	r, _, _ := strings.Cut(rest, "/")
	return r
}

func TestRoomsImportOnlyDown(t *testing.T) {
	t.Parallel()
	var up []string
	for _, p := range goList(t, "./...") {
		from := room(p.ImportPath)
		f, known := floors[from]
		if !known {
			t.Errorf("%s is in room %q, which has no floor here: give it one", p.ImportPath, from)
			continue
		}
		for _, imp := range p.Imports {
			to := room(imp)
			if to == "" || to == from {
				continue
			}
			if g, ok := floors[to]; !ok || g >= f {
				up = append(up, fmt.Sprintf("%s (%s, floor %d) imports %s (%s, floor %d)", p.ImportPath, from, f, imp, to, g))
			}
		}
	}
	if len(up) > 0 {
		t.Errorf("imports that do not go down a floor:\n  %s", strings.Join(up, "\n  "))
	}
}

func TestFilesOfAPackageDoNotReferInACircle(t *testing.T) {
	t.Parallel()
	pkgs := goList(t, "-export", "-deps", "./platform/...", "./display/...")
	exports := map[string]string{}
	for _, p := range pkgs {
		exports[p.ImportPath] = p.Export
	}
	for _, p := range pkgs {
		if r := room(p.ImportPath); r != "platform" && r != "display" {
			continue
		}
		t.Run(strings.TrimPrefix(p.ImportPath, "deckhand/"), func(t *testing.T) {
			edges := fileEdges(t, p, exports)
			if cyc := onCycles(edges); len(cyc) > 0 {
				t.Errorf("references between the package's files that lie on a circle (move the declarations so that "+
					"each file refers only to files below it):\n  %s", strings.Join(cyc, "\n  "))
			}
		})
	}
}

// fileEdges type-checks p from its source, its imports from their export
// data, and answers which of its files refer to which: a → b when a.go
// uses a package-level declaration, a method or a field declared in b.go.
func fileEdges(t *testing.T, p listed, exports map[string]string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if m, ok := p.ImportMap[path]; ok {
			path = m
		}
		if exports[path] == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(exports[path])
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp, FakeImportC: true, Error: func(error) {}}
	pkg, err := conf.Check(p.ImportPath, fset, files, info)
	if err != nil && pkg == nil {
		t.Fatalf("type-check %s: %v", p.ImportPath, err)
	}
	set := map[[2]string]bool{}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		switch o := obj.(type) {
		case *types.Func:
		case *types.Var:
			if !o.IsField() && o.Parent() != pkg.Scope() {
				continue
			}
		case *types.TypeName, *types.Const:
			if o.Parent() != pkg.Scope() {
				continue
			}
		default:
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from != to {
			set[[2]string{from, to}] = true
		}
	}
	edges := map[string][]string{}
	for e := range set {
		edges[e[0]] = append(edges[e[0]], e[1])
	}
	return edges
}

// onCycles are the edges whose end reaches back to their start, sorted.
func onCycles(edges map[string][]string) []string {
	reaches := func(from, to string) bool {
		seen := map[string]bool{from: true}
		for stack := []string{from}; len(stack) > 0; {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n == to {
				return true
			}
			for _, m := range edges[n] {
				if !seen[m] {
					seen[m] = true
					stack = append(stack, m)
				}
			}
		}
		return false
	}
	var out []string
	for a, tos := range edges {
		for _, b := range tos {
			if reaches(b, a) {
				out = append(out, a+" → "+b)
			}
		}
	}
	slices.Sort(out)
	return out
}
