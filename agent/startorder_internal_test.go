package agent

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestCommandsAndFilesStartFirst: the process and files services begin
// serving before any other service starts building, so a new
// container's first command is not queued behind every service's start.
func TestCommandsAndFilesStartFirst(t *testing.T) {
	set := DefaultSettings()
	if err := set.Set("files-root", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	sup := runSupervisor(t, Config{Services: []string{"cron", "notes", "files", "process", "vault", "exec"}, Settings: set})
	began := map[string]int64{}
	for _, u := range sup.units {
		u.mu.Lock()
		began[u.name] = u.since.UnixNano()
		u.mu.Unlock()
	}
	for first := range startFirst {
		for name, at := range began {
			if !startFirst[name] && at <= began[first] {
				t.Errorf("%s began serving at %d, before %s (%d), which starts first", name, at, first, began[first])
			}
		}
	}
}

// TestARequestStartsTheRestAtOnce: the services that do not start first
// wait for their delay, and a request for one of them ends the wait: it
// is answered by its service, not held until the delay is over.
func TestARequestStartsTheRestAtOnce(t *testing.T) {
	set := DefaultSettings()
	if err := set.Set("files-root", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	sup := startSupervisor(t, Config{Services: []string{"files", "process", "cron", "notes"}, Settings: set},
		func(s *Supervisor) { s.order.delay = time.Hour })
	units := map[string]*unit{}
	for _, u := range sup.units {
		units[u.name] = u
	}
	<-units["files"].ready
	<-units["process"].ready
	// The delay is an hour: nothing but a request can start cron.
	select {
	case <-units["cron"].ready:
		t.Fatal("cron started before its delay or a request for it")
	case <-time.After(300 * time.Millisecond):
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get("http://" + sup.GatewayAddr() + "/_/cron/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"cron"`) {
		t.Fatalf("cron's health through the gateway before its delay: %d %s", resp.StatusCode, body)
	}
	<-units["notes"].ready
}
