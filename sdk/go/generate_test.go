package deckhand_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/deckhand-dev/deckhand/sdk/go/internal/harness"
)

// Regenerate: DECKHAND_SDK_REGENERATE=1 with this test writes what it
// would otherwise compare (see README.md, "Regenerating").
var regenerate = os.Getenv("DECKHAND_SDK_REGENERATE") == "1"

// liveDocuments are the OpenAPI documents the running binaries serve:
// the control plane's and each agent service's (through the gateway).
func liveDocuments(t *testing.T) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{"control": get(t, control.URL+"/openapi.json")}
	names, err := agent.Services()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		docs[n] = get(t, agent.URL+"/_/"+n+"/openapi.json")
	}
	return docs
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", u, resp.StatusCode, raw)
	}
	return raw
}

// normalize drops what differs between builds of the same API (the
// version string is the build's git description) and indents the
// document, as the Python SDK keeps it.
func normalize(t *testing.T, raw []byte) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if info, ok := doc["info"].(map[string]any); ok {
		info["version"] = deckhand.APIVersion
	}
	out, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// compare fails the test when path's content is not want (or writes it
// when regenerating).
func compare(t *testing.T, path string, want []byte) {
	t.Helper()
	if regenerate {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the live documents generate: run `make sdk-generate` and commit it (%v)", path, err)
	}
}

// stale fails for generated files in dir whose document no binary serves.
func stale(t *testing.T, pattern string, docs map[string][]byte, name func(string) string) {
	t.Helper()
	matches, _ := filepath.Glob(pattern)
	for _, m := range matches {
		if _, ok := docs[name(m)]; !ok {
			if regenerate {
				_ = os.RemoveAll(m)
				continue
			}
			t.Errorf("%s is generated from a document no binary serves", m)
		}
	}
}

// TestGeneratedCodeMatchesTheLiveDocuments regenerates the Go clients
// (oapi-codegen, pinned in the repository's tools/go.mod), the documents
// the Python SDK reads and the TypeScript types (openapi-typescript,
// pinned in sdk/ts/package-lock.json, through sdk/ts/scripts/generate.mjs)
// from the documents the binaries
// serve, and fails on any difference from what is committed.
func TestGeneratedCodeMatchesTheLiveDocuments(t *testing.T) {
	root := harness.RepoRoot()
	if root == "" {
		t.Skip("not inside the deckhand repository: the generators are pinned there")
	}
	docs := liveDocuments(t)
	tmp := t.TempDir()
	codegen := filepath.Join(tmp, "oapi-codegen")
	build := exec.Command("go", "build", "-o", codegen, "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen")
	build.Dir = filepath.Join(root, "tools")
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build oapi-codegen from tools/go.mod: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(root, "sdk", "ts", "node_modules", "openapi-typescript")); err != nil {
		t.Fatal("openapi-typescript is not installed: run scripts/setup.sh (npm ci in sdk/ts)")
	}
	sdk := filepath.Join(root, "sdk")
	norm := map[string][]byte{}
	tsArgs := []string{filepath.Join(sdk, "ts", "scripts", "generate.mjs")}
	for name, raw := range docs {
		norm[name] = normalize(t, raw)
		src := filepath.Join(tmp, name+".json")
		if err := os.WriteFile(src, norm[name], 0o644); err != nil {
			t.Fatal(err)
		}
		tsArgs = append(tsArgs, src, filepath.Join(tmp, name+".ts"))
	}
	// TypeScript: one node for every document; Go: oapi-codegen per
	// document, meanwhile.
	ts := exec.Command("node", tsArgs...)
	ts.Dir = filepath.Join(sdk, "ts")
	var tsOut bytes.Buffer
	ts.Stdout, ts.Stderr = &tsOut, &tsOut
	if err := ts.Start(); err != nil {
		t.Fatal(err)
	}
	for name := range docs {
		out := filepath.Join(tmp, name+".gen.go")
		if b, err := exec.Command(codegen, "-generate", "types,client", "-package", name, "-o", out, filepath.Join(tmp, name+".json")).CombinedOutput(); err != nil {
			t.Fatalf("oapi-codegen %s: %v\n%s", name, err, b)
		}
	}
	if err := ts.Wait(); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, tsOut.String())
	}
	for name := range docs {
		gen, _ := os.ReadFile(filepath.Join(tmp, name+".gen.go"))
		compare(t, filepath.Join(sdk, "go", "api", name, name+".gen.go"), gen)
		compare(t, filepath.Join(sdk, "python", "deckhand", "openapi", name+".json"), norm[name])
		gen, _ = os.ReadFile(filepath.Join(tmp, name+".ts"))
		compare(t, filepath.Join(sdk, "ts", "src", "gen", name+".ts"), gen)
	}
	stale(t, filepath.Join(sdk, "go", "api", "*"), docs, filepath.Base)
	stale(t, filepath.Join(sdk, "python", "deckhand", "openapi", "*.json"), docs, func(p string) string { return strings.TrimSuffix(filepath.Base(p), ".json") })
	stale(t, filepath.Join(sdk, "ts", "src", "gen", "*.ts"), docs, func(p string) string { return strings.TrimSuffix(filepath.Base(p), ".ts") })
}

// coverage is sdk/coverage.json: for every operation of every document,
// what covers it in each SDK: a hand-written method, or "generated" (the
// Go client in api/<document>, the Python SDK's call(), the TypeScript
// SDK's typed openapi-fetch client).
type coverage struct {
	APIVersion string                                  `json:"api_version"`
	Documents  map[string]map[string]map[string]string `json:"documents"`
}

var languages = []string{"go", "python", "ts"}

// TestEveryRouteHasACoverageEntry fails when an operation of a live
// document has no entry in sdk/coverage.json, when an entry names an
// operation no document has, or when a Go entry names a method that does
// not exist.
func TestEveryRouteHasACoverageEntry(t *testing.T) {
	root := harness.RepoRoot()
	if root == "" {
		t.Skip("not inside the deckhand repository")
	}
	path := filepath.Join(root, "sdk", "coverage.json")
	var cov coverage
	if raw, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(raw, &cov); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	} else if !regenerate {
		t.Fatal(err)
	}
	if cov.Documents == nil {
		cov.Documents = map[string]map[string]map[string]string{}
	}
	live := map[string]map[string]bool{}
	for name, raw := range liveDocuments(t) {
		var doc struct {
			Paths map[string]map[string]struct {
				OperationID string `json:"operationId"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		live[name] = map[string]bool{}
		for p, item := range doc.Paths {
			for method, op := range item {
				if !slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options"}, method) {
					continue
				}
				if op.OperationID == "" {
					t.Errorf("%s: %s %s has no operationId", name, method, p)
					continue
				}
				live[name][op.OperationID] = true
			}
		}
	}
	for name, ops := range live {
		for op := range ops {
			e, ok := cov.Documents[name][op]
			if !ok && regenerate {
				if cov.Documents[name] == nil {
					cov.Documents[name] = map[string]map[string]string{}
				}
				e = map[string]string{"go": "generated", "python": "generated", "ts": "generated"}
				cov.Documents[name][op] = e
				ok = true
			}
			if !ok {
				t.Errorf("%s operation %s has no entry in sdk/coverage.json", name, op)
				continue
			}
			for _, lang := range languages {
				if e[lang] == "" {
					t.Errorf("%s operation %s: no %s entry in sdk/coverage.json", name, op, lang)
				}
			}
			if m := e["go"]; m != "generated" && !goMethodExists(m) {
				t.Errorf("%s operation %s: the Go SDK has no method %s", name, op, m)
			}
		}
	}
	for name, ops := range cov.Documents {
		for op := range ops {
			if !live[name][op] {
				if regenerate {
					delete(ops, op)
					continue
				}
				t.Errorf("sdk/coverage.json names %s operation %s, which no document has", name, op)
			}
		}
	}
	if regenerate {
		cov.APIVersion = deckhand.APIVersion
		out, _ := json.MarshalIndent(cov, "", "  ")
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if cov.APIVersion != deckhand.APIVersion {
		t.Errorf("sdk/coverage.json targets API %q, the Go SDK %q", cov.APIVersion, deckhand.APIVersion)
	}
}

// goMethodExists reports whether "Client.Me" or "Container.Run" names an
// exported method of the SDK.
func goMethodExists(name string) bool {
	typ, method, ok := strings.Cut(name, ".")
	if !ok {
		return false
	}
	types := map[string]reflect.Type{
		"Client":     reflect.TypeOf(&deckhand.Client{}),
		"Container":  reflect.TypeOf(&deckhand.Container{}),
		"Containers": reflect.TypeOf(deckhand.Containers{}),
		"Processes":  reflect.TypeOf(deckhand.Processes{}),
		"Running":    reflect.TypeOf(deckhand.Running{}),
		"Files":      reflect.TypeOf(deckhand.Files{}),
	}
	rt, ok := types[typ]
	if !ok {
		return false
	}
	_, ok = rt.MethodByName(method)
	return ok
}
