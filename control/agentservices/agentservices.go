// Package agentservices names the services a container's agent serves, for
// the control plane, which does not build the agent: the container's hosts
// name them (`<project>-<container>-<service>-<n>...`, docs/spec/operations.md)
// and an access token opens them by name. The agent's registry declares
// each with its port offset; its test checks this list against it.
package agentservices

// Names are the agent's services in the registry's port order.
var Names = []string{"cron", "files", "terminal", "display", "vault", "tunnel", "daemon", "exec", "journal",
	"workspace", "notes", "run", "curl", "notifications", "process", "mcp"}
