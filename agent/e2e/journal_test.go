package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/agent"
)

// journalLines reads the journal through the gateway (after a flush) and
// answers its entries.
func journalLines(t *testing.T, gw, query string) []map[string]any {
	t.Helper()
	if status, _, raw := send(t, "POST", "http://"+gw+"/_/journal/api/v1/journal/flush", ""); status != 200 {
		t.Fatalf("flush: %d %s", status, raw)
	}
	resp, err := client.Get("http://" + gw + "/_/journal/api/v1/journal?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("journal read: %d", resp.StatusCode)
	}
	return out
}

// waitJournal polls the journal until match finds an entry (a hang guard,
// not a timing assertion).
func waitJournal(t *testing.T, a *agentProc, query, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range journalLines(t, a.gw, query) {
			if match(e) {
				return e
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no journal entry %s (query %s): %v\nagent output:\n%s", what, query, journalLines(t, a.gw, query), a.out)
	return nil
}

// followStream is an SSE follower of the journal.
type followStream struct {
	resp   *http.Response
	lines  chan string
	lastID string
}

func follow(t *testing.T, gw, query, lastID string) *followStream {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://"+gw+"/_/journal/api/v1/journal?follow=true&"+query, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("follow: %d", resp.StatusCode)
	}
	f := &followStream{resp: resp, lines: make(chan string, 1000)}
	go func() {
		defer close(f.lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return f
}

// next is the next entry event's data, with its id remembered.
func (f *followStream) next(t *testing.T) map[string]any {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-f.lines:
			if !ok {
				t.Fatal("follow stream ended")
			}
			switch {
			case strings.HasPrefix(line, "id: "):
				f.lastID = line[4:]
			case strings.HasPrefix(line, "data: "):
				var m map[string]any
				if err := json.Unmarshal([]byte(line[6:]), &m); err == nil && m["cursor"] != nil {
					return m
				}
			}
		case <-timeout:
			t.Fatal("no followed entry within 20 s")
		}
	}
}

// TestJournalAcrossIsolation runs cron and the journal as isolated
// children. A cron run's output (written by the cron child through the
// ingest socket) is seen live by a follower; the follower is cut, another
// run happens, and a reconnect with Last-Event-ID resumes exactly after
// the first. A SIGKILLed cron child is journaled by the supervisor (in the
// agent process) too.
func TestJournalAcrossIsolation(t *testing.T) {
	t.Parallel()
	crontab := filepath.Join(t.TempDir(), "crontab")
	a := startEnv(t, []string{"DECKHAND_CRONTAB=" + crontab, "DECKHAND_CRON_RUNNER=false"},
		"--services", "cron,journal", "--isolate", "cron,journal")
	st := a.ready(t)
	for _, s := range st.Services {
		if s.Mode != agent.ModeChild {
			t.Fatalf("%s is not isolated: %+v", s.Name, s)
		}
	}
	cronURL := "http://" + a.gw + "/_/cron/api/v1/cron/entries"
	status, created, raw := send(t, "POST", cronURL, `{"schedule":"0 3 * * *","command":"echo out-$((40+2))"}`)
	if status != 201 {
		t.Fatalf("create entry: %d %s", status, raw)
	}
	id := fmt.Sprint(created["id"])

	f := follow(t, a.gw, "source=cron&limit=1", "")
	if status, _, raw := send(t, "POST", cronURL+"/"+id+"/run", ""); status != 202 {
		t.Fatalf("run: %d %s", status, raw)
	}
	e := f.next(t)
	fields, _ := e["fields"].(map[string]any)
	if e["source"] != "cron" || !strings.Contains(fmt.Sprint(fields["output"]), "out-42") {
		t.Fatalf("followed entry: %v", e)
	}
	first := f.lastID
	f.resp.Body.Close() // the cut

	if status, _, raw := send(t, "POST", cronURL+"/"+id+"/run", ""); status != 202 {
		t.Fatalf("second run: %d %s", status, raw)
	}
	waitJournal(t, a, "source=cron", "for the second run", func(m map[string]any) bool {
		return m["cursor"] != e["cursor"]
	})
	g := follow(t, a.gw, "source=cron", first)
	again := g.next(t)
	if again["cursor"] == e["cursor"] || again["source"] != "cron" {
		t.Fatalf("resumed with %v, first was %v", again, e)
	}
	all := journalLines(t, a.gw, "source=cron")
	if len(all) != 2 || all[1]["cursor"] != again["cursor"] {
		t.Fatalf("journal has %v", all)
	}

	// The supervisor's own entries reach the isolated journal.
	cron := st.Services[0]
	if err := syscall.Kill(cron.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, a, "source=agent&level=error", "for the crash", func(m map[string]any) bool {
		fields, _ := m["fields"].(map[string]any)
		return fields["service"] == "cron" && strings.Contains(fmt.Sprint(fields["error"]), "killed")
	})
	stats := journalStats(t, a.gw)
	if stats["by_source"].(map[string]any)["cron"] != 2.0 {
		t.Fatalf("stats: %v", stats)
	}
}

func journalStats(t *testing.T, gw string) map[string]any {
	t.Helper()
	status, m, raw := get(t, "http://"+gw+"/_/journal/api/v1/journal/stats")
	if status != 200 {
		t.Fatalf("stats: %d %s", status, raw)
	}
	return m
}

// TestVaultSurvivesSIGKILL writes values, SIGKILLs the agent, starts it
// again on the same data: every acknowledged write is there, the store
// file holds no value in the clear (strings(1) finds none), and a wrong
// --vault-key-file stops the agent at start with an error naming it.
func TestVaultSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	a := start(t, "--services", "vault")
	a.ready(t)
	base := "http://" + a.gw + "/_/vault/api/v1/vault/keys/"
	secrets := map[string]string{}
	for i := range 20 {
		v := fmt.Sprintf("plain-secret-%d-%d", i, time.Now().UnixNano())
		secrets["k"+strconv.Itoa(i)] = v
		if status, _, raw := send(t, "PUT", base+"k"+strconv.Itoa(i), `{"value":{"password":"`+v+`"}}`); status != 201 {
			t.Fatalf("put: %d %s", status, raw)
		}
	}
	if status, _, raw := send(t, "PATCH", base+"k0", `{"value":{"user":"u0"}}`); status != 200 {
		t.Fatalf("patch: %d %s", status, raw)
	}
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done

	keyFile := filepath.Join(a.data, "vault.key")
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	dbFile := filepath.Join(a.data, "vault", "store.db")
	out, err := exec.Command("strings", "-n", "6", dbFile).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range secrets {
		if strings.Contains(string(out), v) || strings.Contains(string(out), "plain-secret") {
			t.Fatalf("strings finds a value in %s", dbFile)
		}
	}
	if !strings.Contains(string(out), "k19") {
		t.Fatalf("strings found no key names either; is %s the store? %q", dbFile, out)
	}

	args := []string{"run", "--data", a.data, "--listen", a.gw, "--port-base", strconv.Itoa(a.base), "--services", "vault", "--log-level", "warn"}
	b := startRaw(t, nil, a.gw, a.base, a.data, args...)
	b.ready(t)
	for k, v := range secrets {
		status, m, raw := get(t, base+k)
		value, _ := m["value"].(map[string]any)
		if status != 200 || value["password"] != v {
			t.Fatalf("%s after SIGKILL: %d %s", k, status, raw)
		}
		if k == "k0" && (value["user"] != "u0" || m["version"] != 2.0) {
			t.Fatalf("k0 lost its patch: %s", raw)
		}
	}
	b.stop(t)

	wrong := filepath.Join(t.TempDir(), "wrong.key")
	if err := os.WriteFile(wrong, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// `deckhand service vault` refuses to start; under `deckhand run` the
	// vault alone stays down (the other services keep serving), its status
	// naming the reason, and it serves nothing.
	res, err := deckhand(t, nil, "service", "vault", "--data", a.data, "--listen", "127.0.0.1:0", "--vault-key-file", wrong)
	if err == nil || !strings.Contains(res, wrong) || !strings.Contains(res, "not the key") {
		t.Fatalf("deckhand service vault with a wrong key: %v %s", err, res)
	}
	c := startRaw(t, nil, a.gw, a.base, a.data, append(args, "--vault-key-file", wrong)...)
	c.waitFor(t, "the vault refusing the wrong key", func(st *agent.Status) bool {
		return st != nil && len(st.Services) == 1 && strings.Contains(st.Services[0].LastError, "not the key") &&
			strings.Contains(st.Services[0].LastError, wrong)
	})
	if status, _, raw := get(t, base+"k1"); status == 200 {
		t.Fatalf("served a value under the wrong key: %s", raw)
	}
}

// TestDebugEntriesOnlyAtDebugLevel: every request through the gateway is a
// debug entry (its proxy decision); at the default level the journal holds
// none of them, with --log-level debug it does.
func TestDebugEntriesOnlyAtDebugLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level string
		want  bool
	}{{"info", false}, {"debug", true}} {
		t.Run(tc.level, func(t *testing.T) {
			t.Parallel()
			crontab := filepath.Join(t.TempDir(), "crontab")
			a := startEnv(t, []string{"DECKHAND_CRONTAB=" + crontab, "DECKHAND_CRON_RUNNER=false"},
				"--services", "cron,journal", "--log-level", tc.level)
			a.ready(t)
			cronURL := "http://" + a.gw + "/_/cron/api/v1/cron/entries"
			status, created, raw := send(t, "POST", cronURL, `{"schedule":"0 3 * * *","command":"true"}`)
			if status != 201 {
				t.Fatalf("create entry: %d %s", status, raw)
			}
			if status, _, raw := send(t, "POST", cronURL+"/"+fmt.Sprint(created["id"])+"/run", ""); status != 202 {
				t.Fatalf("run: %d %s", status, raw)
			}
			// The run's entry is recorded after the gateway passed the
			// requests, through the same sink: once it is in the journal,
			// so is any decision the sink kept.
			waitJournal(t, a, "source=cron", "for the run", func(map[string]any) bool { return true })
			var decisions int
			for _, e := range journalLines(t, a.gw, "source=gateway&level=debug&limit=1000") {
				if e["level"] == "debug" && e["message"] == "proxy decision" {
					decisions++
				}
			}
			if got := decisions > 0; got != tc.want {
				t.Fatalf("--log-level %s: %d debug proxy decisions in the journal, want some: %v", tc.level, decisions, tc.want)
			}
		})
	}
}
