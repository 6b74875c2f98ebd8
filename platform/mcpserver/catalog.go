package mcpserver

import (
	"strings"
	"sync"

	"deckhand/platform/mcptool"
)

// catalog is the route tools loaded so far, by service.
type catalog struct {
	mu     sync.Mutex
	loaded map[string]bool
	tools  map[string]*mcptool.Tool
}

// tool is the route tool of that name loaded, or nil.
func (c *catalog) tool(name string) *mcptool.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools[name]
}

// toolService is the service a tool calls: the part of its name before
// the first underscore.
func toolService(name string) string {
	svc, _, _ := strings.Cut(name, "_")
	return svc
}
