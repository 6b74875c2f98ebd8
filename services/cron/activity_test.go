package cron_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"deckhand/platform/platformtest"
	"deckhand/services/cron"
)

// With the runner on, a crontab run in progress keeps the container busy
// (the control plane's idle stop); once it ends the service is idle from
// that moment. Without the runner the service runs nothing and reports
// nothing.
func TestRunInProgressIsActivity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	tab := writeTab(t, "@daily touch "+started+"; while [ ! -e "+release+" ]; do sleep 0.05; done\n")
	svc, err := cron.New(platformtest.ServiceDeps(t, "cron"), &cron.Settings{Crontab: tab, Runner: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	h := platformtest.ServiceHost(t, svc)
	if a := svc.Activity(); len(a.Busy) != 0 || !a.Last.IsZero() {
		t.Fatalf("before any run: %+v", a)
	}
	id := entries(t, h)[0]["id"].(string)
	call(t, h, "POST", "/api/v1/cron/entries/"+id+"/run", nil)
	waitFor(t, "the run to start", func() bool { _, err := os.Stat(started); return err == nil })
	if a := svc.Activity(); a.Busy["cron_run"] != 1 {
		t.Fatalf("during the run: %+v", a)
	}
	before := time.Now()
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run to end", func() bool { return len(svc.Activity().Busy) == 0 })
	if a := svc.Activity(); a.Last.Before(before) {
		t.Fatalf("after the run: %+v (it ended after %v)", a, before)
	}
}
