package contract

import (
	"sync"

	"deckhand/platform"
)

// Peers are the hosts of the services a process serves in itself right
// now, by service name. The agent adds a service's host while it serves
// and takes it away when it stops; a service that calls another's tools
// (the MCP service) looks the host up here, so its call runs on in the
// platform's code and never back through the agent's.
type Peers struct{ m sync.Map }

// Serve records h as service's host while it serves.
func (p *Peers) Serve(service string, h *platform.Host) { p.m.Store(service, h) }

// Stop forgets h as service's host; a newer host of the same service
// stays.
func (p *Peers) Stop(service string, h *platform.Host) { p.m.CompareAndDelete(service, h) }

// Host is service's host when this process serves it, else nil (a child
// service, or none); a nil Peers has none.
func (p *Peers) Host(service string) *platform.Host {
	if p == nil {
		return nil
	}
	h, _ := p.m.Load(service)
	hp, _ := h.(*platform.Host)
	return hp
}
