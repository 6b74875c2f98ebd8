// Package reference holds the API reference's check: `make docs`
// (scripts/docs.sh) fetches every OpenAPI document from the built binaries
// and renders each with Redoc (render.mjs, npm lockfile beside it) into
// static HTML that must name every operation of its document.
package reference_test

import (
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"deckhand/agent"
	"deckhand/platform/platformtest"
)

func TestEveryDocumentRendersWithItsOperations(t *testing.T) {
	if _, err := os.Stat("node_modules/redoc"); err != nil {
		t.Fatal("Redoc is not installed: run scripts/setup.sh (npm ci in docs/reference)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: run scripts/setup.sh")
	}
	bin := t.TempDir()
	for name, pkg := range map[string]string{
		"deckhand":         "deckhand/agent/cmd/deckhand",
		"deckhand-control": "deckhand/control/cmd/deckhand-control",
	} {
		path, cleanup, err := platformtest.Binary(name, pkg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cleanup)
		if err := os.Symlink(path, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/docs.sh", out)
	cmd.Env = append(os.Environ(), "DECKHAND_BIN="+bin, "DOCS_PORT_BASE="+strconv.Itoa(platformtest.FreePortBase(t, 17)))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/docs.sh: %v\n%s", err, b)
	}

	// Every document: the control plane's and each service the agent has.
	want := append([]string{"control"}, agent.Registered()...)
	sort.Strings(want)
	docs, err := filepath.Glob(filepath.Join(out, "openapi", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, strings.TrimSuffix(filepath.Base(d), ".json"))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("documents fetched %v, want %v", got, want)
	}
	index, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}

	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(out, "openapi", name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Info  struct{ Title string }
				Paths map[string]map[string]json.RawMessage
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			page, err := os.ReadFile(filepath.Join(out, name+".html"))
			if err != nil {
				t.Fatal(err)
			}
			text := string(page)
			if !strings.Contains(text, "<title>"+html.EscapeString(doc.Info.Title)+"</title>") {
				t.Errorf("%s.html is not titled %q", name, doc.Info.Title)
			}
			if !strings.Contains(string(index), `href="`+name+`.html"`) {
				t.Errorf("index.html does not link %s.html", name)
			}
			ops := 0
			for path, item := range doc.Paths {
				for method, raw := range item {
					var op struct{ OperationID string }
					if json.Unmarshal(raw, &op) != nil || op.OperationID == "" {
						continue // parameters, summary: not operations
					}
					ops++
					// Redoc's server rendering gives each operation an
					// anchor, tag/<tag>/operation/<operationId>.
					if !strings.Contains(text, "/operation/"+op.OperationID+`"`) {
						t.Errorf("%s.html does not render %s %s (%s)", name, strings.ToUpper(method), path, op.OperationID)
					}
				}
			}
			if ops == 0 {
				t.Fatalf("%s has no operations", name)
			}
		})
	}
}
