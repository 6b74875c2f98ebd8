package agent

import (
	"os"
	"path/filepath"
)

// desktopEnv puts the desktop in the agent's own environment, which every
// program it starts inherits (the process, terminal, exec and daemon
// services build their children's environment from it, and isolated
// services are its children): DISPLAY when a display was given by flag,
// and the session D-Bus at its standard place ($XDG_RUNTIME_DIR/bus) when
// DBUS_SESSION_BUS_ADDRESS is unset. Toolkits find the accessibility bus
// through the session bus (org.a11y.Bus), so with both a program's windows
// appear in the display service's accessibility tree.
func desktopEnv(display string) {
	if display != "" && os.Getenv("DISPLAY") != display {
		_ = os.Setenv("DISPLAY", display)
	}
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		return
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		sock := filepath.Join(rt, "bus")
		if st, err := os.Stat(sock); err == nil && st.Mode()&os.ModeSocket != 0 {
			_ = os.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+sock)
		}
	}
}
