package contract

// Program names of proxy permissions (docs/spec/operations.md): what a document's
// rules name. platform/proxyperm evaluates them; they live here so every
// service's OpenAPI document can say which program the gateway judges it
// as.
const (
	ProgramHTTP          = "http"
	ProgramTerminal      = "terminal"
	ProgramSSH           = "ssh"
	ProgramFiles         = "files"
	ProgramExec          = "exec"
	ProgramServices      = "services"
	ProgramNotifications = "notifications"
)

// servicePrograms maps the services a program other than services judges.
// Every service that runs a command is terminal or exec, so a services
// grant never reaches a command.
var servicePrograms = map[string]string{
	"terminal": ProgramTerminal,
	"process":  ProgramExec, "daemon": ProgramExec, "exec": ProgramExec, "cron": ProgramExec, "run": ProgramExec,
	"files":         ProgramFiles,
	"notifications": ProgramNotifications,
	"tunnel":        ProgramHTTP, // judged by the tunnelled port: ssh for 22
}

// ServiceProgram is the program proxy permissions judge a service as
// (services for any service not named in docs/spec/operations.md's table).
func ServiceProgram(service string) string {
	if p, ok := servicePrograms[service]; ok {
		return p
	}
	return ProgramServices
}

// programDescription tells a service's OpenAPI readers which program of
// the proxy permissions document admits a request through the gateway.
func programDescription(service string) string {
	p := ServiceProgram(service)
	switch {
	case service == "tunnel":
		return "Through the agent's gateway, proxy permissions judge /proxy/{port}/ and the WebSocket route by the " +
			"tunnelled port (program ssh for port 22, http for any other, the rule's ports matched against that port) " +
			"and this service's other routes as program services."
	case p == ProgramExec || p == ProgramTerminal:
		return "Through the agent's gateway, proxy permissions judge every route of this service as program " + p +
			" (it runs commands: a services grant never reaches it)."
	}
	return "Through the agent's gateway, proxy permissions judge every route of this service as program " + p + "."
}
