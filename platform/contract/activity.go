package contract

import "time"

// Activity is what a service is doing now that keeps its container from
// being idle (the control plane's idle stop): Busy counts it by kind
// ("process", "terminal", "mcp_session"), and Last is when the last of it
// ended (zero: none yet), so idleness counts from that moment rather
// than from the last request.
type Activity struct {
	Busy map[string]int
	Last time.Time
}

// ActivityReporter is implemented by services whose work goes on
// between requests: the agent asks it when it reports its idleness.
type ActivityReporter interface {
	Activity() Activity
}
