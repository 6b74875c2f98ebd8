package agent

import (
	"testing"
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
