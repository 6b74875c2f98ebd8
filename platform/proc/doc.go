// Package proc holds what every service that runs commands (daemon, exec,
// process, terminal) needs: a process group of its own, running as another
// user, the one environment builder that keeps the agent's own settings
// and credentials from every program it starts (Env), signals by name, killing a whole process tree, pseudo-terminals,
// and reading a program's output line by line or keeping a bounded part
// of it.
//
// Reaping: the services wait for their own children with os/exec. The
// agent never waits for all children (wait4(-1)) in its own process, which
// would steal those exit statuses; as PID 1 it first forks itself and
// reaps orphans from the parent (agent/init_linux.go). Orphans of a
// program (a daemonising grandchild) are re-parented to that init, or to
// the container's own init when the agent is not PID 1, which reap them.
package proc
