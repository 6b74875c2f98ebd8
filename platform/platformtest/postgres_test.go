package platformtest_test

import (
	"context"
	"testing"

	"deckhand/platform/platformtest"

	"github.com/jackc/pgx/v5"
)

func TestPostgresGivesEachTestItsOwnDatabase(t *testing.T) {
	a, b := platformtest.Postgres(t), platformtest.Postgres(t)
	if a == b {
		t.Fatalf("same database twice: %s", a)
	}
	ctx := context.Background()
	for _, url := range []string{a, b} {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		var user string
		var tables int
		err = conn.QueryRow(ctx, "SELECT current_user, (SELECT count(*) FROM pg_tables WHERE schemaname = 'public')").Scan(&user, &tables)
		conn.Close(ctx)
		if err != nil || user != "postgres" || tables != 0 {
			t.Fatalf("%s: user %q, %d tables, %v", url, user, tables, err)
		}
	}
}
