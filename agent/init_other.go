//go:build !linux

package agent

// InitChildEnv marks the agent that a PID 1 deckhand started under itself.
const InitChildEnv = "DECKHAND_INIT_CHILD"

// NeedsInit is Linux-only; elsewhere the agent never acts as init.
func NeedsInit() bool { return false }

// RunInit is never called off Linux.
func RunInit() int { return 1 }
