package agent

import "time"

// Backoff is the restart delay of one supervised service: it doubles from
// Min up to Max on each quick crash, and falls back to Min once the service
// has stayed up for Stable, so a service that crashes once a day restarts at
// once while a crash loop does not spin.
type Backoff struct {
	Min, Max, Stable time.Duration
	next             time.Duration
}

// DefaultBackoff is what the supervisor uses.
func DefaultBackoff() Backoff {
	return Backoff{Min: 100 * time.Millisecond, Max: 10 * time.Second, Stable: 30 * time.Second}
}

// Next is the delay before restarting a service that ran for uptime.
func (b *Backoff) Next(uptime time.Duration) time.Duration {
	if b.next == 0 || uptime >= b.Stable {
		b.next = b.Min
	}
	d := b.next
	b.next *= 2
	if b.next > b.Max {
		b.next = b.Max
	}
	return d
}
