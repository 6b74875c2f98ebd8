package workspace_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"deckhand/platform/fault"
	"deckhand/platform/platformtest"
	"deckhand/platform/store"
	"deckhand/services/workspace"
)

// TestKeysAndIndexSurviveARestart writes a key and journal entries, opens
// the same data directory again with a new service: the sealed key opens
// (the key file is reused) and the index still ranks.
func TestKeysAndIndexSurviveARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func() (*workspace.Service, *store.DB) {
		db, err := store.Open(filepath.Join(dir, "store.db"))
		if err != nil {
			t.Fatal(err)
		}
		deps := platformtest.ServiceDeps(t, "workspace")
		deps.DataDir, deps.Store = dir, db
		svc, err := workspace.New(deps, nil)
		if err != nil {
			t.Fatal(err)
		}
		return svc, db
	}
	ctx := context.Background()
	svc, db := open()
	if _, err := svc.PatchConfig(ctx, workspace.ConfigPatchInput{WorkspaceRef: workspace.WorkspaceRef{Workspace: "w"}, Body: workspace.ConfigPatch{"providers": map[string]any{
		"groq": map[string]any{"type": "groq", "api_key": "gsk-restart-1"}}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"alpha beta", "beta gamma gamma", "delta"} {
		if _, err := svc.Append(ctx, workspace.EntryAppend{WorkspaceRef: workspace.WorkspaceRef{Workspace: "w"}, Body: workspace.AppendEntry{Content: c}}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	svc, db = open()
	defer db.Close()
	key, ok, err := svc.ProviderKey(ctx, "w", "groq")
	if err != nil || !ok || key != "gsk-restart-1" {
		t.Fatalf("key after restart: %q %v %v", key, ok, err)
	}
	if _, ok, _ := svc.ProviderKey(ctx, "w", "openai"); ok {
		t.Fatal("a key for an unconfigured provider")
	}
	res, err := svc.Search(ctx, workspace.SearchInput{WorkspaceRef: workspace.WorkspaceRef{Workspace: "w"}, Body: workspace.SearchRequest{Query: "gamma beta", Limit: 10}})
	if err != nil || len(res.Hits) != 2 || res.Hits[0].Content != "beta gamma gamma" {
		t.Fatalf("search after restart: %+v %v", res, err)
	}
}

// TestConfigVersionRace: of patches naming the same version, one wins.
func TestConfigVersionRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.svc.PatchConfig(context.Background(), workspace.ConfigPatchInput{WorkspaceRef: workspace.WorkspaceRef{Workspace: "w"}, Body: workspace.ConfigPatch{"version": 0.0,
				"instructions": []any{"AGENTS-" + strings.Repeat("x", i+1) + ".md"}}})
			code := "ok"
			if err != nil {
				code = fault.AsError(err).Code
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes["ok"] != 1 || codes[fault.CodeConflict] != 7 {
		t.Fatalf("racing patches %v", codes)
	}
}
