package proxy

// Services are the services a container's agent serves, as the
// container's hosts name them (`<project>-<container>-<service>-<n>...`,
// docs/spec/operations.md). The agent's registry declares them with their
// ports; its test checks this list against it.
var Services = []string{"cron", "files", "terminal", "display", "vault", "tunnel", "daemon", "exec", "journal",
	"workspace", "notes", "run", "curl", "notifications", "process", "mcp"}
