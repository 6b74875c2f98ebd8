package cataloge2e_test

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"deckhand/control/controltest"
)

// builtinVersion is the version the binary under test registers its
// images under (`deckhand-control version`: "deckhand-control V (built ...)").
func builtinVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(controltest.Binary(), "version").Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) < 2 {
		t.Fatalf("deckhand-control version: %v %q", err, out)
	}
	return f[1]
}

// builtinImages lists the catalog and checks that it holds exactly the
// built-in pair of version, free, each image_name the engine reference.
func builtinImages(t *testing.T, s server, token, version string) []string {
	t.Helper()
	r := s.Must(200, "GET", "/api/v1/images/public?sort_by=alias&sort_order=asc", nil, token)
	if got, want := aliases(r), "deckhand/base:"+version+",deckhand/desktop:"+version; got != want {
		t.Fatalf("catalog aliases %q, want %q (%s)", got, want, pagination(r))
	}
	var ids []string
	for _, it := range data(r)["images"].([]any) {
		img := it.(map[string]any)
		if img["image_name"] != img["alias"] || img["price"] != 0.0 || img["os"] != "debian" || img["architecture"] == "" {
			t.Fatalf("built-in image record %v", img)
		}
		ids = append(ids, img["id"].(string))
	}
	sort.Strings(ids)
	return ids
}

// At first start the control plane registers deckhand/base and
// deckhand/desktop of its version (free, any user may import them); a
// restart on the same store registers nothing again, and on PostgreSQL two
// replicas starting at once on a fresh database register the pair once.
func TestBuiltinImagesRegisteredOnce(t *testing.T) {
	version := builtinVersion(t)
	a := server{controltest.Start(t, "--builtin-images")}
	adm := a.Admin()
	user, _ := a.User(adm, "builtin")
	ids := builtinImages(t, a, user, version)
	// Free: a user imports one into the library.
	a.Must(200, "POST", "/api/v1/images/import/"+ids[0], nil, user)

	a.Stop()
	a = server{controltest.StartIn(t, a.Data, "--builtin-images")}
	if again := builtinImages(t, a, user, version); strings.Join(again, ",") != strings.Join(ids, ",") {
		t.Fatalf("after a restart: %v, want the same %v", again, ids)
	}
	// Off: nothing is added, what is there stays.
	a.Stop()
	a = server{controltest.StartIn(t, a.Data, "--builtin-images=false")}
	builtinImages(t, a, user, version)
	a.Stop()

	if !controltest.OnPostgres() {
		return
	}
	// A fresh database, its schema and master key made by a first start
	// without the images; then two replicas start together.
	first := controltest.Start(t, "--builtin-images=false")
	key := filepath.Join(first.Data, "master.key")
	db := controltest.DatabaseURL(t, first.Data)
	first.Stop()
	replicas := make([]server, 2)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := t.TempDir()
			replicas[i] = server{controltest.StartArgs(t, data, "serve", "--listen", "127.0.0.1:0", "--data", data, "--log-level", "warn",
				"--database-url", db, "--master-key-file", key, "--admin-email", controltest.AdminEmail,
				"--admin-password", controltest.AdminPass, "--builtin-images")}
		}()
	}
	wg.Wait()
	if replicas[0].Server == nil || replicas[1].Server == nil {
		t.Fatal("a replica did not start")
	}
	adm = replicas[0].Admin()
	user, _ = replicas[0].User(adm, "builtin-replicas")
	ids = builtinImages(t, replicas[0], user, version)
	if other := builtinImages(t, replicas[1], user, version); strings.Join(other, ",") != strings.Join(ids, ",") {
		t.Fatalf("replica B lists %v, A %v", other, ids)
	}
}
