package access_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"deckhand/agent/access"
	clockpkg "deckhand/platform/clock"
)

// Versions only move forward, across restarts: a control plane that
// answers an older document (rolled back, or an answer replayed) is
// refused and nothing is written; a container's and its project's
// documents count separately.
func TestOlderDocumentVersionRefused(t *testing.T) {
	t.Parallel()
	ks := newKeySet(t)
	clock := clockpkg.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	var doc atomic.Value
	serve := func(container, def string, v int) {
		doc.Store(fmt.Sprintf(`{"project":"p1","container":%q,"groups":{},"permissions":{},"default":%q,"file_version":%d}`, container, def, v))
	}
	cp := signedPlaneOf(t, ks, clock, func() string { return doc.Load().(string) })
	dir := t.TempDir()
	start := func() *access.Authorizer {
		a, err := access.New(access.Config{ControlURL: cp.URL, ContainerID: "c2", Token: "agt_test", Journal: &journal{}, Clock: clock, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	saved := filepath.Join(dir, "effective.json")
	ctx := context.Background()

	a := start()
	serve("c2", "deny", 5)
	if err := a.SyncOnce(ctx); err != nil || a.ETag() != "container:file:v5" {
		t.Fatalf("v5: %v %s", err, a.ETag())
	}
	before, _ := os.ReadFile(saved)
	serve("c2", "allow", 3)
	if err := a.SyncOnce(ctx); err == nil || !strings.Contains(err.Error(), "older than version 5") || a.ETag() != "container:file:v5" {
		t.Fatalf("v3 after v5: %v, in force %s", err, a.ETag())
	}
	if after, _ := os.ReadFile(saved); string(after) != string(before) {
		t.Fatalf("effective.json changed: %s", after)
	}

	// A restart remembers the highest version.
	a = start()
	if a.ETag() != "container:file:v5" {
		t.Fatalf("restart put %q in force", a.ETag())
	}
	if err := a.SyncOnce(ctx); err == nil || a.ETag() != "container:file:v5" {
		t.Fatalf("v3 after a restart: %v, in force %s", err, a.ETag())
	}
	// The project's document has its own count; the container's moves on.
	serve("*", "allow", 2)
	if err := a.SyncOnce(ctx); err != nil || a.ETag() != "project:file:v2" {
		t.Fatalf("project v2: %v %s", err, a.ETag())
	}
	serve("c2", "deny", 4)
	if err := a.SyncOnce(ctx); err == nil || a.ETag() != "project:file:v2" {
		t.Fatalf("container v4 after v5: %v, in force %s", err, a.ETag())
	}
	serve("c2", "deny", 6)
	if err := a.SyncOnce(ctx); err != nil || a.ETag() != "container:file:v6" {
		t.Fatalf("v6: %v %s", err, a.ETag())
	}
}

// A copy of another container's agent files (a fork of a snapshot) puts
// nothing of that container's in force: not its document, not its
// version counts. The fork's own document, at a lower version, applies.
func TestAnotherContainersSavedDocumentIgnored(t *testing.T) {
	t.Parallel()
	ks := newKeySet(t)
	clock := clockpkg.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	var doc atomic.Value
	serve := func(container, def string, v int) {
		doc.Store(fmt.Sprintf(`{"project":"p1","container":%q,"groups":{},"permissions":{},"default":%q,"file_version":%d}`, container, def, v))
	}
	cp := signedPlaneOf(t, ks, clock, func() string { return doc.Load().(string) })
	dir := t.TempDir()
	start := func(id string) *access.Authorizer {
		a, err := access.New(access.Config{ControlURL: cp.URL, ContainerID: id, Token: "agt_test", Journal: &journal{}, Clock: clock, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ctx := context.Background()
	serve("src", "allow", 5)
	if a := start("src"); a.SyncOnce(ctx) != nil || a.ETag() != "container:file:v5" {
		t.Fatalf("the source's document: %s", a.ETag())
	}
	fork := start("fork")
	if got := fork.ETag(); got != "" {
		t.Fatalf("a fork put the source's saved document in force: %q", got)
	}
	serve("fork", "deny", 1)
	if err := fork.SyncOnce(ctx); err != nil || fork.ETag() != "container:file:v1" {
		t.Fatalf("the fork's own document at version 1: %v, in force %q", err, fork.ETag())
	}
}
