package agent

import (
	"net/url"
	"path/filepath"

	"deckhand/agent/access"
	"deckhand/agent/egress"
)

// newEgress is the network layer beside the gateway: it enforces the
// container's network configuration from the control plane in the
// namespace the agent runs in.
func newEgress(cfg Config) *egress.Engine {
	opt := egress.Options{Journal: cfg.Journal, Logger: cfg.Logger}
	if u, err := url.Parse(cfg.ControlURL); err == nil && u.Hostname() != "" {
		opt.ExemptNames = []string{u.Hostname()}
	}
	e := egress.New(opt)
	// Where the agent can enforce the rules, nothing it starts may get
	// around them with CAP_NET_RAW.
	if e.Enforceable() {
		if err := egress.DropRawNet(); err != nil {
			cfg.Logger.Warn("CAP_NET_RAW stays with the programs the agent starts: they can get around the egress rules", "err", err)
		}
	}
	return e
}

// egressSync polls the network configuration through the same verified
// channel as the proxy permissions (one token, one key set), keeping the
// last verified copy in <data>/egress.
func (s *Supervisor) egressSync() egress.SyncConfig {
	return egress.SyncConfig{
		Control: s.access.Control(), ContainerID: s.cfg.ContainerID, ControlURL: s.cfg.ControlURL,
		Dir: filepath.Join(s.cfg.Data, "egress"), Engine: s.egress,
		Data: access.Data, Save: access.SaveVerified, Load: access.LoadVerified, Journal: s.cfg.Journal,
	}
}
