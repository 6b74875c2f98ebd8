package proxy

import "time"

// SetConnWait shortens how long a request waits for a connection, for a
// test; it answers the function that restores it.
func SetConnWait(d time.Duration) func() {
	old := connWait
	connWait = d
	return func() { connWait = old }
}

// SetIdleTTL changes how long idle connections to agents are kept, for a
// test; it answers the function that restores it.
func SetIdleTTL(d time.Duration) func() {
	old := idleTTL
	idleTTL = d
	return func() { idleTTL = old }
}
