package platform

// PortOffsets are the fixed port offsets of operations.md: a service's
// port is the agent's --port-base plus its offset. A service that calls
// another on the agent's behalf finds it here.
var PortOffsets = map[string]int{
	"cron": 1, "files": 2, "terminal": 3, "display": 4, "vault": 5, "tunnel": 6, "daemon": 7,
	"exec": 8, "journal": 9, "workspace": 10, "notes": 11, "run": 12, "curl": 13, "notifications": 14,
	"process": 15, "mcp": 16,
}
