package mcp

import "deckhand/platform/contract"

// Activity counts the open MCP sessions (each keeps the container from
// idling until it ends: DELETE, --mcp-session-idle or the service's
// close) and when the last one ended.
func (s *Service) Activity() contract.Activity {
	u := s.subs
	u.mu.Lock()
	defer u.mu.Unlock()
	a := contract.Activity{Last: u.lastEnded}
	if n := len(u.byID); n > 0 {
		a.Busy = map[string]int{"mcp_session": n}
	}
	return a
}
