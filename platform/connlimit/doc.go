// Package connlimit owns how the agent's listeners survive running short
// of file descriptors: Accept backs off on EMFILE, ENFILE and the like
// instead of failing (a listener that stops accepting would stop the
// agent), connections are capped in total and per key (a local user), and
// the caps come from the process's descriptor limit, so a flood cannot
// take the descriptors the agent needs for everything else.
package connlimit
