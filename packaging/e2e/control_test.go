// Package e2e checks what operators do with the packaged binaries: units
// that systemd accepts, Debian packages that install and purge cleanly,
// the agent as PID 1, backup and restore of the control plane, and moving
// a bbolt control plane to PostgreSQL. Control-plane tests run on both
// engines (controltest).
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"deckhand/control/controltest"
	"deckhand/platform/platformtest"
)

func TestMain(m *testing.M) { controltest.Main(m) }

// probe is one GET a user makes; its answer must survive a restore or a
// move to PostgreSQL unchanged.
type probe struct{ bearer, path string }

// seed makes accounts with balances, projects and proxy permission
// documents, and returns the reads that show them.
func seed(t *testing.T, s *controltest.Server) []probe {
	admin := s.Admin()
	probes := []probe{{admin, "/api/v1/admin/users"}, {"", "/api/v1/meta/public-key"}}
	for i := range 3 {
		id, tok := s.User(admin, fmt.Sprintf("user%d@example.com", i))
		s.MustDo(200, "POST", "/api/v1/admin/wallet/credit", map[string]any{"user_id": id, "amount": fmt.Sprintf("%d.25", 10+i), "reason": "seed"}, admin)
		p := controltest.Data(s.MustDo(201, "POST", "/api/v1/admin/projects", map[string]any{"owner_id": id, "name": fmt.Sprintf("proj%d", i)}, admin))
		pid := p["id"].(string)
		doc := map[string]any{"project": pid, "container": "*", "groups": map[string]any{},
			"permissions": map[string]any{"all": map[string]any{"http": "*"}}, "default": "allow"}
		s.Must(s.Call("PUT", "/api/v1/projects/"+pid+"/proxy/permissions", doc, tok, "If-Match", "file:v0"), 200)
		probes = append(probes,
			probe{tok, "/api/v1/users/auth/me"},
			probe{tok, "/api/v1/wallet/balances"},
			probe{tok, "/api/v1/wallet/transactions"},
			probe{tok, "/api/v1/projects"},
			probe{tok, "/api/v1/projects/" + pid},
			probe{tok, "/api/v1/projects/" + pid + "/proxy/permissions"},
		)
	}
	return probes
}

// answers reads every probe (status and body).
func answers(t *testing.T, s *controltest.Server, probes []probe) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range probes {
		r := s.Call("GET", p.path, nil, p.bearer)
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", p.path, r.Status, r.Raw)
		}
		out[p.bearer[:min(8, len(p.bearer))]+" "+p.path] = string(r.Raw)
	}
	return out
}

func sameAnswers(t *testing.T, want, got map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s:\n before %s\n after  %s", k, w, got[k])
		}
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestBackupRestore backs the control plane up the way docs/operating/operations.md
// says (bbolt: a copy of the stopped data dir; PostgreSQL: pg_dump), changes
// it afterwards, restores into a fresh place and finds every account,
// balance and document as it was at the backup.
func TestBackupRestore(t *testing.T) {
	data := t.TempDir()
	key := filepath.Join(t.TempDir(), "master.key") // apart from the data, as the unit keeps it
	s := controltest.StartIn(t, data, "--master-key-file", key)
	probes := seed(t, s)
	want := answers(t, s, probes)
	s.Stop()

	backup := t.TempDir()
	restoreFlags := []string{"--master-key-file", key}
	restoreData := t.TempDir()
	if controltest.OnPostgres() {
		dump := filepath.Join(backup, "deckhand.sql")
		run(t, "pg_dump", "--no-owner", "--no-privileges", "--file", dump, controltest.DatabaseURL(t, data))
		target := platformtest.Postgres(t)
		run(t, "psql", "--quiet", "--set", "ON_ERROR_STOP=1", "--file", dump, target)
		restoreFlags = append(restoreFlags, "--database-url", target)
	} else {
		run(t, "cp", "-a", data+"/.", backup)
		restoreData = backup
	}
	// After the backup the live store moves on; the restore must not see it.
	s = controltest.StartIn(t, data, "--master-key-file", key)
	admin := s.Admin()
	_, _ = s.User(admin, "late@example.com")
	s.Stop()

	args := []string{"serve", "--listen", "127.0.0.1:0", "--data", restoreData, "--log-level", "warn"}
	r := controltest.StartArgs(t, restoreData, append(args, restoreFlags...)...)
	sameAnswers(t, want, answers(t, r, probes))
	users := r.MustDo(200, "GET", "/api/v1/admin/users", nil, r.Admin()).Raw
	if strings.Contains(string(users), "late@example.com") {
		t.Fatalf("the restore holds a user made after the backup: %s", users)
	}
	r.Stop()
	verify := []string{"wallet", "verify", "--data", restoreData}
	if controltest.OnPostgres() {
		verify = append(verify, restoreFlags[2:]...)
	}
	if out, err := controltest.Out(verify...); err != nil {
		t.Fatalf("wallet verify after restore: %v\n%s", err, out)
	}
}

// TestMigrateFromBbolt moves a bbolt control plane to PostgreSQL with
// `migrate --from-bbolt` and finds the same answers (same sessions, same
// signing keys); a second run changes nothing, a different target is
// refused without --force.
func TestMigrateFromBbolt(t *testing.T) {
	if controltest.OnPostgres() {
		t.Skip("moves a bbolt store: runs in the embedded-store pass")
	}
	data := t.TempDir()
	s := controltest.StartIn(t, data)
	probes := seed(t, s)
	want := answers(t, s, probes)
	db := platformtest.Postgres(t)
	if out, err := controltest.Out("migrate", "--from-bbolt", data, "--database-url", db); err == nil || !strings.Contains(out, "stop the control plane") {
		t.Fatalf("migrate of a store in use: want a refusal, got %v\n%s", err, out)
	}
	if out, err := controltest.Out("migrate", "--from-bbolt", data); err == nil || !strings.Contains(out, "--database-url") {
		t.Fatalf("migrate without a target: want an error naming --database-url, got %v\n%s", err, out)
	}
	s.Stop()

	out, err := controltest.Out("migrate", "--from-bbolt", data, "--database-url", db)
	if err != nil || !strings.Contains(out, "every count matches") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if out, err := controltest.Out("migrate", "--from-bbolt", data, "--database-url", db); err != nil || !strings.Contains(out, "already holds this store") {
		t.Fatalf("second migrate: %v\n%s", err, out)
	}
	pg := controltest.StartArgs(t, data, "serve", "--listen", "127.0.0.1:0", "--data", data, "--database-url", db, "--log-level", "warn")
	sameAnswers(t, want, answers(t, pg, probes))
	_, _ = pg.User(pg.Admin(), "onpg@example.com") // the target moves on
	pg.Stop()
	out, err = controltest.Out("migrate", "--from-bbolt", data, "--database-url", db)
	if err == nil || !strings.Contains(out, "not empty") {
		t.Fatalf("migrate over a different target: want a refusal, got %v\n%s", err, out)
	}
	if out, err := controltest.Out("migrate", "--from-bbolt", data, "--database-url", db, "--force"); err != nil || !strings.Contains(out, "every count matches") {
		t.Fatalf("migrate --force: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "control.db")); err != nil {
		t.Fatal(err)
	}
}
