package notes

import (
	"net/http"

	"deckhand/platform"
)

const node = "/api/v1/notes/notebooks/{notebookId}/nodes/{nodeId}"

// noteArgs name a document route's parameters for a model: the node by
// notebook and node, the version in the body rather than If-Match.
var noteArgs = map[string]string{"notebookId": "notebook", "nodeId": "node", "If-Match": "-"}

// documentText is how notes_read reads for a model: Markdown of the
// blocks under the title, as the export writes it.
const documentText = "# {{.title}} (version {{.version}})\n{{range .blocks}}\n" +
	"{{if eq .type \"heading\"}}{{repeat \"#\" (add .level 1)}} {{.text}}\n" +
	"{{else if eq .type \"list\"}}{{$ordered := .ordered}}{{range $i, $item := .items}}" +
	"{{if $ordered}}{{add $i 1}}.{{else}}-{{end}} {{$item}}\n{{end}}" +
	"{{else if eq .type \"code\"}}```{{with .language}}{{.}}{{end}}\n{{.text}}\n```\n" +
	"{{else if eq .type \"divider\"}}---\n" +
	"{{else}}{{.text}}\n{{end}}{{end}}"

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"notes"}
	return []platform.Route{
		{Method: http.MethodGet, Path: "/api/v1/notes", OperationID: "listNodes", Tags: tags, Summary: "List the nodes that have a document",
			Description: "A page of nodes in notebook, then node id order (byte order), each with its title, version, number of " +
				"blocks and times, not the blocks (read one with GET .../document). notebook= keeps one notebook's nodes; " +
				"limit (1-1000, default 100) bounds the page, and next, present when more follow, is passed as after= for the " +
				"next one. A malformed notebook or after is 400 naming it.",
			Op: platform.Op(s.List),
			Tool: &platform.Tool{Name: "notes_list", Title: "List notes",
				Description: "List the notes (notebook nodes with a document) in notebook, then node order: each one's notebook, " +
					"node, title, version and number of blocks, not the content (notes_read reads one). Give notebook to list one " +
					"notebook. When next is set, more follow: call again with after set to it.",
				Text: "{{range .nodes}}{{.notebook_id}}/{{.node_id}} {{printf \"%q\" .title}} version {{.version}}, {{.blocks}} blocks\n" +
					"{{else}}no notes\n{{end}}{{with .next}}more follow: call again with after={{.}}\n{{end}}",
				ReadOnly: true, Idempotent: true}},
		{Method: http.MethodGet, Path: node + "/document", OperationID: "getDocument", Tags: tags, Summary: "Read a node's document",
			Description: "With its version (also the ETag). 404 for an unknown node.", Op: platform.Op(s.Get),
			Tool: &platform.Tool{Name: "notes_read", Title: "Read a note",
				Description: "Read a note (a notebook node's document): its title, version and typed blocks, with a text rendering.",
				Text:        documentText, Budget: true, ReadOnly: true, Idempotent: true, Args: noteArgs}},
		{Method: http.MethodPut, Path: node + "/document", OperationID: "putDocument", Tags: tags, Summary: "Create or replace a node's document",
			Description: "201 when created, 200 when replaced. Replacing needs the current version, as If-Match \"N\" or version " +
				"in the body (428 PRECONDITION_REQUIRED without; 409 VERSION_CONFLICT when it is not current). version 0 (or " +
				"If-Match \"0\") creates only. Every block is checked (ids unique, heading level 1-6, diagram statements parse); " +
				"a broken rule is 400 naming the field (blocks[3].level) and nothing is written.",
			Status: http.StatusCreated, Statuses: []int{http.StatusOK}, Op: platform.Op(s.Put),
			Tool: &platform.Tool{Name: "notes_write", Title: "Write a note",
				Description: "Create or replace a note's whole document: title and typed blocks (text, heading with level, list " +
					"with items, quote, code with language, math, diagram, divider), each with a unique id. Replacing needs the " +
					"version notes_read answered (a stale one is refused: read again and redo the change); version 0 creates only.",
				Text:        "wrote {{.notebook_id}}/{{.node_id}}: {{len .blocks}} blocks, version {{.version}}",
				Destructive: true, Idempotent: true, Args: noteArgs}},
		{Method: http.MethodPatch, Path: node + "/document", OperationID: "patchDocument", Tags: tags, Summary: "Edit a node's document",
			Description: "Sets the title and applies ops in order: insert (block, at index, default the end), update (id, block: " +
				"the new content, the id stays), delete (id), move (id to index). All or none: an op naming a block that is not " +
				"there is 400 naming ops[i].id. With If-Match or version the edit applies only to that version (409 " +
				"VERSION_CONFLICT otherwise); without, it applies to the current one. 404 for an unknown node.",
			Op: platform.Op(s.Patch)},
		{Method: http.MethodGet, Path: node + "/blocks/{blockId}/svg", OperationID: "getBlockSVG", Tags: tags, Summary: "A block rendered as SVG",
			Description: "image/svg+xml, well-formed XML. Text, heading, list, quote and code blocks are wrapped to width; math is " +
				"a minimal TeX rendering and diagrams are boxes and arrows (see the service description). The drawing keeps " +
				"its proportions: a diagram or formula wider than width is scaled down to it. 404 for an unknown node or block. " +
				"The answer carries Content-Security-Policy: " + platform.SandboxCSP + " and X-Content-Type-Options: nosniff, " +
				"so the image opened as a page runs nothing on the agent's origin.",
			ContentType: "image/svg+xml; charset=utf-8", Op: platform.Op(s.BlockSVG)},
		{Method: http.MethodPost, Path: node + "/export-ticket", OperationID: "createExportTicket", Tags: tags, Summary: "A one-time URL that downloads the node as Markdown",
			Description: "201 with a ticket good for one download within ttl_seconds (default 300). Only its hash is stored. The " +
				"node must exist (404). The download renders the document as it is then.",
			Status: http.StatusCreated, Op: platform.Op(s.IssueTicket)},
		{Method: http.MethodGet, Path: "/api/v1/notes/export", OperationID: "exportNode", Tags: tags, Summary: "Download a node as Markdown with a ticket",
			Description: "text/markdown as an attachment named <nodeId>.md. The first request uses the ticket up: a second, or one " +
				"after it expired, is 410 GONE; an unknown ticket is 404. The ticket travels in the query, not the path, so " +
				"access logs (which record paths) never hold a live ticket.",
			ContentType: "text/markdown; charset=utf-8", Op: platform.Op(s.Export)},
	}
}
