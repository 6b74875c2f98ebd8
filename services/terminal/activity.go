package terminal

import (
	"maps"
	"slices"

	"deckhand/platform/contract"
)

// Activity counts the live sessions a client is attached to (an open
// terminal keeps the container from idling) and when the last client
// left one or the last attached shell exited.
func (s *Service) Activity() contract.Activity {
	s.mu.Lock()
	all := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()
	var a contract.Activity
	open := 0
	for _, sess := range all {
		st := sess.state()
		if !st.exited && st.clients > 0 {
			open++
		}
		if st.exited && st.exitedAt.After(a.Last) {
			a.Last = st.exitedAt
		}
		if st.clients == 0 && st.idleSince.After(a.Last) {
			a.Last = st.idleSince
		}
	}
	if open > 0 {
		a.Busy = map[string]int{"terminal": open}
	}
	return a
}
