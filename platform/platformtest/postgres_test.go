package platformtest_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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

// TestPostgresStopsWhenTheTestBinaryDies kills a test binary that started
// a server: the watchdog stops the server and removes its directory.
func TestPostgresStopsWhenTheTestBinaryDies(t *testing.T) {
	if os.Getenv("DECKHAND_PG_CHILD") == "1" {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, platformtest.Postgres(t))
		if err != nil {
			t.Fatal(err)
		}
		var dir string
		if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		fmt.Printf("server %s %s\n", dir, strings.Split(strings.Split(platformtest.Postgres(t), "@")[1], "/")[0])
		time.Sleep(time.Minute)
		return
	}
	child := exec.Command(os.Args[0], "-test.run=^TestPostgresStopsWhenTheTestBinaryDies$", "-test.count=1")
	child.Env = append(os.Environ(), "DECKHAND_PG_CHILD=1")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var dir, addr string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "server %s %s", &dir, &addr); err == nil {
			break
		}
	}
	if dir == "" {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatal("the child started no server")
	}
	_ = child.Process.Kill() // SIGKILL: no cleanup of its own runs
	_ = child.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, statErr := os.Stat(dir)
		c, dialErr := net.DialTimeout("tcp", addr, time.Second)
		if c != nil {
			c.Close()
		}
		if os.IsNotExist(statErr) && dialErr != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the test binary died: data dir %s stat %v, %s dial %v", dir, statErr, addr, dialErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
