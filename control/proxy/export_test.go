package proxy

import "time"

// SetConnWait shortens how long a request waits for a connection, for a
// test; it answers the function that restores it.
func SetConnWait(d time.Duration) func() {
	old := connWait
	connWait = d
	return func() { connWait = old }
}
