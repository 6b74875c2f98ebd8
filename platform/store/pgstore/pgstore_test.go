package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/platform/platformtest"
	"deckhand/platform/store"
	"deckhand/platform/store/pgstore"

	"github.com/jackc/pgx/v5"
)

func open(t *testing.T, url string) *store.DB {
	t.Helper()
	db, err := pgstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestValuesReadableWithSQL: JSON values are jsonb, so operators can query
// them; raw values are bytea.
func TestValuesReadableWithSQL(t *testing.T) {
	t.Parallel()
	url := platformtest.Postgres(t)
	db := open(t, url)
	err := db.Update(func(tx *store.Tx) error {
		if err := tx.Put("users", "u1", map[string]any{"email": "a@example.com", "n": 3}); err != nil {
			return err
		}
		return tx.PutRaw("emails", "a@example.com", []byte("u1"))
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var email, typ, id string
	err = conn.QueryRow(ctx, `SELECT value->>'email', jsonb_typeof(value->'n'),
		(SELECT convert_from(raw, 'UTF8') FROM kv WHERE bucket = 'emails')
		FROM kv WHERE bucket = 'users' AND key = 'u1'`).Scan(&email, &typ, &id)
	if err != nil || email != "a@example.com" || typ != "number" || id != "u1" {
		t.Fatalf("psql view: %q %q %q %v", email, typ, id, err)
	}
}

// TestReplicasMigrateTogether: replicas starting at once on an empty
// database all succeed; the migrations ran once.
func TestReplicasMigrateTogether(t *testing.T) {
	t.Parallel()
	url := platformtest.Postgres(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := pgstore.Open(context.Background(), url)
			if err == nil {
				db.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	applied, err := pgstore.Migrate(context.Background(), url)
	if err != nil || len(applied) != 0 {
		t.Fatalf("second migrate applied %v, %v", applied, err)
	}
	fresh := platformtest.Postgres(t)
	applied, err = pgstore.Migrate(context.Background(), fresh)
	if err != nil || len(applied) == 0 || applied[0] != "0001_kv.sql" {
		t.Fatalf("migrate on an empty database: %v, %v", applied, err)
	}
}

// TestBadURL: a wrong or unreachable --database-url fails at start naming
// the host and database, never the password.
func TestBadURL(t *testing.T) {
	t.Parallel()
	url := platformtest.Postgres(t)
	port := strings.Split(strings.Split(url, "@127.0.0.1:")[1], "/")[0]
	for _, c := range []struct {
		url  string
		want []string
	}{
		{"postgres://app:s3cr3t-pw@127.0.0.1:1/appdb?connect_timeout=2", []string{"127.0.0.1", `"appdb"`, "port 1"}},
		{"postgres://postgres:s3cr3t-pw@127.0.0.1:" + port + "/no_such_db", []string{"127.0.0.1", `"no_such_db"`, "does not exist"}},
		{"postgres://app:s3cr3t-pw@no-such-host.invalid:5432/appdb?connect_timeout=2", []string{"no-such-host.invalid", `"appdb"`}},
		{"postgres://app:s3cr3t-pw@127.0.0.1:notaport/appdb", []string{"--database-url"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		db, err := pgstore.Open(ctx, c.url)
		cancel()
		if err == nil {
			db.Close()
			t.Errorf("%s: opened", c.url)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %s", c.url, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", c.url, err)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: error shows the password: %q", c.url, err)
		}
	}
}

// TestDatabaseLostWhileServing stops PostgreSQL under a serving store:
// transactions fail with ErrUnavailable and write nothing, and service
// resumes by itself when the database is back.
func TestDatabaseLostWhileServing(t *testing.T) {
	t.Parallel()
	srv := platformtest.NewPGServer(t)
	url := srv.CreateDB(t)
	db := open(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	notes := db.Subscribe(ctx, "c")
	put := func(k string) error {
		return db.Update(func(tx *store.Tx) error {
			if err := tx.Put("b", k, k); err != nil {
				return err
			}
			return tx.Put("b", k+"-second", k)
		})
	}
	if err := put("before"); err != nil {
		t.Fatal(err)
	}
	receive(t, db, notes, "ready")
	srv.Stop()
	err := put("during")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("with the database gone: want ErrUnavailable, got %v", err)
	}
	err = db.View(func(tx *store.Tx) error { tx.GetRaw("b", "before"); return nil })
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("a read that ignored the error: want ErrUnavailable, got %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for err = put("after"); err != nil; err = put("after") {
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after the database came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	err = db.View(func(tx *store.Tx) error {
		var keys []string
		_ = tx.ForEach("b", func(k string, _ []byte) error { keys = append(keys, k); return nil })
		if fmt.Sprint(keys) != "[after after-second before before-second]" {
			t.Errorf("keys after the outage: %v", keys)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The listener reconnected: subscribers hear of the gap, then messages.
	gap := false
	deadline = time.Now().Add(20 * time.Second)
	for !gap && time.Now().Before(deadline) {
		select {
		case n := <-notes:
			gap = gap || n.Gap
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !gap {
		t.Error("no gap notification after the listener reconnected")
	}
	receive(t, db, notes, "hello")
}

// receive publishes payload until it comes back on notes: the listener is
// connected.
func receive(t *testing.T, db *store.DB, notes <-chan store.Notification, payload string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := db.Publish(context.Background(), "c", payload); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-notes:
			if n.Payload == payload {
				return
			}
		case <-time.After(200 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatalf("%q never came back", payload)
			}
		}
	}
}
