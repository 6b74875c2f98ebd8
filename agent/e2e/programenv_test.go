package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// agentOnly are lines of a program's `env` output that belong to the agent
// alone.
func agentOnly(env string) []string {
	var bad []string
	for _, line := range strings.Split(env, "\n") {
		if strings.HasPrefix(line, "DECKHAND_") || strings.HasPrefix(line, "NOTIFY_SOCKET=") {
			bad = append(bad, line)
		}
	}
	return bad
}

// TestProgramsRunAsAnotherUserGetNoAgentSettings: an agent holding its
// agt_ token in DECKHAND_TOKEN starts a daemon program and an exec
// schedule as nobody; neither sees any DECKHAND_* variable (the token
// among them), while both get the user's own HOME and the variables their
// definitions add.
func TestProgramsRunAsAnotherUserGetNoAgentSettings(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run programs as nobody")
	}
	t.Parallel()
	// A directory nobody may write its findings into.
	out, err := os.MkdirTemp("", "programenv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(out) })
	if err := os.Chmod(out, 0o777); err != nil {
		t.Fatal(err)
	}
	sched := filepath.Join(t.TempDir(), "schedules.yaml")
	if err := os.WriteFile(sched, []byte("schedules:\n  - name: envdump\n    schedule: \"@yearly\"\n    user: nobody\n"+
		"    env: {SCHEDULE_VAR: s1}\n    command: env\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "agt_programenvsecret"
	a := startEnv(t, []string{"DECKHAND_TOKEN=" + secret, "NOTIFY_SOCKET=/nonexistent/notify"},
		"--services", "daemon,exec", "--exec-schedules", sched)
	a.ready(t)

	dump := filepath.Join(out, "daemon.env")
	body := `{"command":"/bin/sh","args":["-c","env > ` + dump + `.tmp && mv ` + dump + `.tmp ` + dump + `; exec sleep 300"],` +
		`"user":"nobody","env":{"PROGRAM_VAR":"p1"}}`
	if status, _, raw := send(t, "PUT", "http://"+a.gw+"/_/daemon/api/v1/daemon/programs/envdump", body); status/100 != 2 {
		t.Fatalf("put program: %d %s", status, raw)
	}
	if status, _, raw := send(t, "POST", "http://"+a.gw+"/_/exec/api/v1/exec/schedules/trigger", `{"name":"envdump"}`); status != 202 {
		t.Fatalf("trigger: %d %s", status, raw)
	}

	var daemonEnv, execEnv string
	deadline := time.Now().Add(30 * time.Second)
	for (daemonEnv == "" || execEnv == "") && time.Now().Before(deadline) {
		if raw, err := os.ReadFile(dump); err == nil {
			daemonEnv = string(raw)
		}
		if _, m, _ := get(t, "http://"+a.gw+"/_/exec/api/v1/exec/schedules/history"); m != nil {
			runs, _ := m["runs"].([]any)
			for _, r := range runs {
				if run, _ := r.(map[string]any); run["status"] == "succeeded" {
					execEnv, _ = run["stdout"].(string)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if daemonEnv == "" || execEnv == "" {
		t.Fatalf("the programs wrote no environment (daemon %q, exec %q):\n%s", daemonEnv, execEnv, a.out)
	}
	for name, env := range map[string]string{"daemon": daemonEnv, "exec": execEnv} {
		if bad := agentOnly(env); len(bad) > 0 || strings.Contains(env, secret) {
			t.Errorf("the %s program as nobody sees the agent's own settings: %v", name, bad)
		}
		if !strings.Contains(env, "\nUSER=nobody\n") && !strings.HasPrefix(env, "USER=nobody\n") {
			t.Errorf("the %s program did not run as nobody:\n%s", name, env)
		}
	}
	if !strings.Contains(daemonEnv, "PROGRAM_VAR=p1") || !strings.Contains(execEnv, "SCHEDULE_VAR=s1") {
		t.Errorf("a definition's own variables were not passed:\ndaemon:\n%s\nexec:\n%s", daemonEnv, execEnv)
	}
}
