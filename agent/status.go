package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"deckhand/platform"
	"deckhand/platform/netconf"
)

// Status is what GET /_agent/status answers and `deckhand status` prints.
type Status struct {
	Agent    AgentStatus     `json:"agent"`
	Services []ServiceStatus `json:"services"`
	// Egress is the network layer's state and newest decisions (absent
	// without a control plane).
	Egress *netconf.Status `json:"egress,omitempty"`
}

// AgentStatus describes the supervisor process.
type AgentStatus struct {
	PID           int     `json:"pid"`
	Version       string  `json:"version"`
	Started       string  `json:"started"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	Listen        string  `json:"listen"`
	Data          string  `json:"data"`
	Domain        string  `json:"domain"`
}

// ServiceStatus describes one supervised service.
type ServiceStatus struct {
	Name          string           `json:"name"`
	Address       string           `json:"address"`
	URL           string           `json:"url"`
	Mode          string           `json:"mode"`
	Command       string           `json:"command,omitempty"`
	State         string           `json:"state"`
	PID           int              `json:"pid"`
	Started       string           `json:"started,omitempty"`
	UptimeSeconds float64          `json:"uptime_seconds"`
	Restarts      int              `json:"restarts"`
	LastError     string           `json:"last_error,omitempty"`
	Health        *platform.Health `json:"health"`
	HealthError   string           `json:"health_error,omitempty"`
}

// Status snapshots every service and asks each for its health record.
func (s *Supervisor) Status(ctx context.Context) Status {
	st := Status{Agent: AgentStatus{
		PID: os.Getpid(), Version: platform.Version, Started: s.started.UTC().Format(time.RFC3339Nano),
		UptimeSeconds: time.Since(s.started).Seconds(), Listen: s.gwLn.Addr().String(), Data: s.cfg.Data, Domain: s.cfg.Settings.Common.Domain,
	}}
	st.Services = make([]ServiceStatus, len(s.units))
	var wg sync.WaitGroup
	for i, u := range s.units {
		u.mu.Lock()
		ss := ServiceStatus{Name: u.name, Address: u.addr, URL: "http://" + u.addr, Mode: u.mode, State: u.state,
			PID: u.pid, Restarts: u.restarts, LastError: u.lastErr}
		if u.mode == ModeChild {
			ss.Command = strings.Join(u.argv, " ")
		}
		if u.pid != 0 {
			ss.Started = u.since.UTC().Format(time.RFC3339Nano)
			ss.UptimeSeconds = time.Since(u.since).Seconds()
		}
		u.mu.Unlock()
		st.Services[i] = ss
		wg.Go(func() {
			hctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			h, err := s.fetchHealth(hctx, u.addr)
			if err != nil {
				st.Services[i].HealthError = err.Error()
				return
			}
			st.Services[i].Health = h
			// A service's own verdict can change while it runs (an X server
			// appears): the fresh record decides running vs unavailable.
			if cur := st.Services[i].State; cur == StateRunning || cur == StateUnavailable {
				st.Services[i].State = u.observe(h, st.Services[i].PID)
			}
		})
	}
	wg.Wait()
	if s.egress != nil {
		es := s.egress.Status()
		st.Egress = &es
	}
	return st
}

func (s *Supervisor) serveStatus(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(s.Status(r.Context()))
}
