// Package mcptool is the route table's face as Model Context Protocol
// tools, as platform's OpenAPI document is its face over HTTP: it reads a
// service's route tools (platform.Tool) from that document, takes a
// call's arguments apart into the operation's and the face's own (the
// budget and the page), and reads the operation's answer for a model: its
// text (x-text), cut to the budget, a page of its paged member, its image
// as image content. The MCP service lists, judges and calls the tools.
//
// Files, bottom up: trim.go (pages of text), errtext.go (a failure as a
// model reads it), tool.go (a route tool and its face), call.go (a call's
// arguments), answer.go (the answer as a model reads it), summarize.go
// (a call's arguments as the journal keeps them).
package mcptool
