// Package agent owns the in-container agent behind `deckhand run`: the
// service registry (which services exist, their port offsets, how each is
// built), the supervisor that runs every service on its own listener —
// in-process, or as a supervised child process — restarting crashed ones
// with exponential backoff while the rest keep serving, the systemd
// notifications, and the status the gateway reports for `deckhand status`.
// The gateway itself is agent/gateway; the command line is agent/cmd/deckhand.
package agent
