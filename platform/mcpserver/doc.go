// Package mcpserver owns the agent's Model Context Protocol server over
// the route table: Streamable HTTP (sessions bound to the credential that
// opened them, resumable SSE streams) built on the official Go SDK, whose
// tools/list is the route tools of the services it acts for and whose
// tools/call runs a tool's operation through its service's host in memory
// (its port when the service runs as a child), reading the answer as the
// route's face says (platform/mcptool). A tool call thus goes from the
// gateway through the platform to the operation and back, with no other
// service between.
//
// Who may use what: the gateway judges a request to the server's service
// as usual and, because that service acts for its caller, also judges the
// caller against each service the tools call, each as its own program and
// port (contract.Acting). A tool of a service the caller may not reach, or
// outside its tool allow-list (mcp_tools), is left out of tools/list and
// refused on tools/call; so are resources read by the same means
// (Options.ResourceOf). Every tool call and its outcome goes to the
// journal.
//
// What is not one route (compositions such as files_edit, resources and
// their subscriptions) its service adds on the SDK's server (Options.Add)
// and runs through RunTool, so the same reach and checks apply.
package mcpserver
