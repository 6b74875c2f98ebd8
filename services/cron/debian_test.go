package cron_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/platform/platformtest"
	"deckhand/platform/proc"
	"deckhand/services/cron"
)

// Debian's cron package against what the API writes through the default
// crontab (the crontab command): every entry appears in `crontab -l`
// unchanged, the crontab command (which checks the syntax on install)
// takes it, and the cron daemon accepts the whole crontab: it runs the
// @reboot entry written through the API at its start (cron ignores a whole
// crontab with one bad line, so the @reboot run shows it read all of it).
// It uses root's crontab, saved and restored around the test.
func TestDebianCronAcceptsWhatTheAPIWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it installs root's crontab and starts the cron daemon")
	}
	crontabBin, err := exec.LookPath("crontab")
	if err != nil {
		t.Skip("Debian's cron package is not installed (scripts/setup.sh installs it)")
	}
	cronBin, err := exec.LookPath("cron")
	if err != nil {
		cronBin = "/usr/sbin/cron"
	}
	prev, err := exec.Command(crontabBin, "-l").Output()
	had := err == nil
	t.Cleanup(func() {
		if had {
			c := exec.Command(crontabBin, "-")
			c.Stdin = bytes.NewReader(prev)
			_ = c.Run()
		} else {
			_ = exec.Command(crontabBin, "-r").Run()
		}
	})
	_ = exec.Command(crontabBin, "-r").Run()

	deps := platformtest.ServiceDeps(t, "cron")
	h := platformtest.ServiceHost(t, newService(t, deps, &cron.Settings{}))
	list := call(t, h, "GET", "/api/v1/cron/entries", nil)
	if list.status != 200 || list.m["crontab"] != "crontab command ("+crontabBin+")" || list.m["format"] != "user" || len(list.m["entries"].([]any)) != 0 {
		t.Fatalf("default crontab: %d %s", list.status, list.raw)
	}
	header := "# managed by people and by deckhand\nSHELL=/bin/sh\nMAILTO=\"\"\n\n# m h  dom mon dow   command\n"
	if a := call(t, h, "PUT", "/api/v1/cron/crontab", header, "If-Match", "*"); a.status != 200 {
		t.Fatalf("put: %d %s", a.status, a.raw)
	}
	marker := filepath.Join(t.TempDir(), "rebooted")
	for _, e := range []map[string]any{
		{"schedule": "*/5 * * * 1-5", "command": "true weekdays", "comment": "every five minutes"},
		{"schedule": "@reboot", "command": "touch " + marker},
		{"schedule": "30 4 1 jan *", "command": "true new year", "enabled": false},
		{"schedule": "@daily", "command": "true to delete"},
	} {
		if a := call(t, h, "POST", "/api/v1/cron/entries", e); a.status != 201 {
			t.Fatalf("create %v: %d %s", e, a.status, a.raw)
		}
	}
	a := call(t, h, "DELETE", "/api/v1/cron/entries/"+idByCommand(t, h, "true to delete"), nil)
	if a.status != 200 {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	want := header + "\n# every five minutes\n*/5 * * * 1-5 true weekdays\n@reboot touch " + marker + "\n# 30 4 1 jan * true new year\n"
	got, err := exec.Command(crontabBin, "-l").Output()
	if err != nil || string(got) != want {
		t.Fatalf("crontab -l (%v):\n%q\nwant\n%q", err, got, want)
	}
	if raw := call(t, h, "GET", "/api/v1/cron/crontab", nil); string(raw.raw) != want {
		t.Fatalf("raw %q", raw.raw)
	}
	if b, err := os.ReadFile(filepath.Join(deps.DataDir, "crontab.bak")); err != nil || !strings.Contains(string(b), "true to delete") {
		t.Fatalf("backup before the delete: %q %v", b, err)
	}
	// A text the crontab command refuses is a 400 and changes nothing.
	a = call(t, h, "PUT", "/api/v1/cron/crontab", "this is not cron\n", "If-Match", "*")
	if a.status != 400 || a.m["code"] != "INVALID_SCHEDULE" || a.m["details"] != "crontab" {
		t.Fatalf("refused text: %d %s", a.status, a.raw)
	}
	if got, _ := exec.Command(crontabBin, "-l").Output(); string(got) != want {
		t.Fatalf("a refused text changed the crontab: %q", got)
	}

	// The daemon: cron runs @reboot entries at its first start after a
	// boot, which it remembers in /run/crond.reboot.
	_ = os.Remove("/run/crond.reboot")
	var out bytes.Buffer
	d := exec.Command(cronBin, "-f")
	d.Stdout, d.Stderr = &out, &out
	d.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- d.Wait() }()
	t.Cleanup(func() {
		_ = proc.KillGroup(d.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	deadline := time.After(30 * time.Second) // hang guard
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		select {
		case err := <-exited:
			exited <- err
			if strings.Contains(out.String(), "lock") {
				t.Skipf("another cron daemon runs here: %s", out.String())
			}
			t.Fatalf("cron exited: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("cron did not run the @reboot entry: it did not accept the crontab\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
