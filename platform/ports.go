package platform

// PortOffsets are the agent's port offsets by service, for a service that
// calls another on its port (the mcp service's tools). The agent's
// registry declares each service's offset (agent.Offsets); a test there
// keeps this copy equal to it.
var PortOffsets = map[string]int{
	"cron": 1, "files": 2, "terminal": 3, "display": 4, "vault": 5, "tunnel": 6, "daemon": 7,
	"exec": 8, "journal": 9, "workspace": 10, "notes": 11, "run": 12, "curl": 13, "notifications": 14,
	"process": 15, "mcp": 16,
}
