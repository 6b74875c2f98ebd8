package workspace

import (
	"net/http"

	"deckhand/platform"
)

const base = "/api/v1/workspaces/{workspaceID}"

// workspaceArg names the workspace's path parameter workspace in its tools.
var workspaceArg = map[string]string{"workspaceID": "workspace"}

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	mem, cfg := []string{"memory"}, []string{"config"}
	return []platform.Route{
		{Method: http.MethodGet, Path: base + "/memory/blocks", OperationID: "listBlocks", Tags: mem, Summary: "List memory blocks by label",
			Op: platform.Op(s.Blocks),
			Tool: &platform.Tool{Name: "workspace_memory_list", Title: "List memory blocks",
				Description: "The workspace's memory blocks by label: each one's value, description, limit and version.",
				Text: "{{range .blocks}}{{.label}} ({{runes .value}}/{{.limit}} characters, version {{.version}}): {{.description}}\n" +
					"{{else}}no memory blocks{{end}}",
				ReadOnly: true, Idempotent: true, Args: workspaceArg}},
		{Method: http.MethodGet, Path: base + "/memory/blocks/{label}", OperationID: "getBlock", Tags: mem, Summary: "Read a memory block",
			Description: "404 for an unknown label.", Op: platform.Op(s.Block),
			Tool: &platform.Tool{Name: "workspace_memory_read", Title: "Read a memory block",
				Description: "Read one memory block of the workspace by label.", Text: "{{.value}}",
				ReadOnly: true, Idempotent: true, Args: workspaceArg}},
		{Method: http.MethodPut, Path: base + "/memory/blocks/{label}", OperationID: "putBlock", Tags: mem, Summary: "Create or replace a memory block",
			Description: "201 when created, 200 when replaced. label is 1-64 of A-Z a-z 0-9 . _ -. value must fit the block's limit " +
				"(characters, i.e. Unicode code points; default the memory configuration's default_block_limit, at most its " +
				"max_block_limit); a workspace holds at most max_blocks blocks. The change is kept in the history.",
			Statuses: []int{http.StatusCreated}, Op: platform.Op(s.PutBlock),
			Tool: &platform.Tool{Name: "workspace_memory_write", Title: "Write a memory block",
				Description: "Create or replace a memory block: its whole value (within its limit of characters) and, optionally, " +
					"description and limit. The previous value stays in the memory history.",
				Text: "wrote {{.label}}: version {{.version}}", Destructive: true, Idempotent: true, Args: workspaceArg}},
		{Method: http.MethodPatch, Path: base + "/memory/blocks/{label}", OperationID: "patchBlock", Tags: mem, Summary: "Change fields of a memory block",
			Description: "Changes the fields given; append adds text at the end of value. With version, the change applies only to " +
				"that version (409 CONFLICT otherwise). A value over the limit is 400 naming value (or append). Kept in the history.",
			Op: platform.Op(s.PatchBlock)},
		{Method: http.MethodDelete, Path: base + "/memory/blocks/{label}", OperationID: "deleteBlock", Tags: mem, Summary: "Delete a memory block",
			Description: "204; the block stays readable in the history. 404 for an unknown label.", Status: http.StatusNoContent,
			Op: platform.CommandOp(s.DeleteBlock)},
		{Method: http.MethodGet, Path: base + "/memory/journal", OperationID: "listJournalEntries", Tags: mem, Summary: "List journal entries, newest first",
			Op: platform.Op(s.Journal)},
		{Method: http.MethodPost, Path: base + "/memory/journal", OperationID: "appendJournalEntry", Tags: mem, Summary: "Append a journal entry",
			Description: "201 with the entry (id j_N, increasing). content is indexed for search at once; at most the memory " +
				"configuration's max_entry_chars characters.",
			Status: http.StatusCreated, Op: platform.Op(s.Append)},
		{Method: http.MethodGet, Path: base + "/memory/journal/count", OperationID: "countJournalEntries", Tags: mem, Summary: "Count journal entries",
			Op: platform.Op(s.CountEntries)},
		{Method: http.MethodGet, Path: base + "/memory/journal/{id}", OperationID: "getJournalEntry", Tags: mem, Summary: "Read a journal entry",
			Description: "404 for an unknown id.", Op: platform.Op(s.JournalEntry)},
		{Method: http.MethodDelete, Path: base + "/memory/journal/{id}", OperationID: "deleteJournalEntry", Tags: mem, Summary: "Delete a journal entry",
			Description: "204; the entry leaves the index too. 404 for an unknown id.", Status: http.StatusNoContent, Op: platform.CommandOp(s.DeleteEntry)},
		{Method: http.MethodPost, Path: base + "/memory/journal/search", OperationID: "searchJournal", Tags: mem, Summary: "Full-text search of the journal, BM25-ranked",
			Description: "Entries containing any of the query's words (content and tags, tokenized as the service description " +
				"says) ranked by Okapi BM25 with the memory configuration's k1 and b and idf = ln(1 + (N - df + 0.5)/(df + 0.5)); " +
				"equal scores rank the newer entry first. limit 1-100 (default 10).",
			Op: platform.Op(s.Search)},
		{Method: http.MethodGet, Path: base + "/memory/history", OperationID: "listMemoryChanges", Tags: mem, Summary: "Memory block changes, newest first",
			Op: platform.Op(s.History)},
		{Method: http.MethodGet, Path: base + "/memory/history/{id}", OperationID: "getMemoryChange", Tags: mem, Summary: "Read one change",
			Description: "The block before and after the change. 404 for an unknown id.", Op: platform.Op(s.HistoryEntry)},
		{Method: http.MethodGet, Path: base + "/memory/config", OperationID: "getMemoryConfig", Tags: mem, Summary: "Memory configuration and counts",
			Description: "The memory section of the workspace configuration (change it with PATCH .../config, member memory), " +
				"with the counts of blocks and journal entries and the ranking and tokenizer used.",
			Op: platform.Op(s.MemoryConfig)},

		{Method: http.MethodGet, Path: base + "/config", OperationID: "getConfig", Tags: cfg, Summary: "Read the workspace configuration",
			Description: "The document with defaults filled in. Provider keys are never included: api_key_set says one is stored.",
			Op:          platform.Op(s.GetConfig)},
		{Method: http.MethodPatch, Path: base + "/config", OperationID: "patchConfig", Tags: cfg, Summary: "Change the configuration with a JSON merge patch",
			Description: "RFC 7396: members given replace, objects merge, null removes (providers.x.api_key: null removes a stored " +
				"key; leaving api_key out keeps it). The result is checked against the schema (this body's) and its rules; a " +
				"broken rule is 400 INVALID naming the field by its path (providers.openai.base_url, memory.search.b) and nothing " +
				"is written. An integer version member, when given, must be the current version (409 CONFLICT otherwise). project " +
				"and api_key_set are read-only. api_key is sealed at rest and never answered.",
			Op: platform.Op(s.PatchConfig)},
		{Method: http.MethodGet, Path: base + "/config/schema", OperationID: "getConfigSchema", Tags: cfg, Summary: "The configuration's JSON schema",
			Description: "The schema PATCH .../config checks the merged document against (the shape; the rules beside it, such as " +
				"model naming a configured provider, are in the members' descriptions), for editors and clients that validate first.",
			Op: platform.Op(s.ConfigSchema)},
		{Method: http.MethodGet, Path: base + "/config/providers", OperationID: "listConfiguredProviders", Tags: cfg, Summary: "Configured model providers",
			Description: "The providers of the configuration with their models and whether each is connected (a key stored, or in " +
				"the environment variable of its type), and the default model per provider. Keys are never answered.",
			Op: platform.Op(s.ConfigProviders)},
		{Method: http.MethodGet, Path: base + "/providers", OperationID: "listProviders", Tags: cfg, Summary: "Every known and configured provider",
			Description: "Every provider type the service knows (anthropic, google, groq, mistral, ollama, openai, " +
				"openai-compatible, openrouter) and every configured provider, with connected and the ids of the connected ones. " +
				"A type counts as connected without configuration when its key variable (OPENAI_API_KEY ...) is set in the " +
				"agent's environment. Keys are never answered.",
			Op: platform.Op(s.Providers)},
		{Method: http.MethodGet, Path: base + "/mcp", OperationID: "listMCPServers", Tags: cfg, Summary: "List MCP servers",
			Description: "Environment and header values are never answered, only their names.", Op: platform.Op(s.MCPServers)},
		{Method: http.MethodPost, Path: base + "/mcp", OperationID: "addMCPServer", Tags: cfg, Summary: "Add an MCP server",
			Description: "A local server (command run with MCP on stdio) or a remote one (url). 201 when added, 200 when it replaced " +
				"the server of that name. Environment and header values are sealed at rest and never answered. The service keeps " +
				"the configuration; it does not connect to servers, so tools lists the tool names given here.",
			Status: http.StatusCreated, Statuses: []int{http.StatusOK}, Op: platform.Op(s.AddMCP)},
		{Method: http.MethodGet, Path: base + "/skills", OperationID: "listSkills", Tags: cfg, Summary: "List skills by name",
			Op: platform.Op(s.Skills)},
		{Method: http.MethodGet, Path: base + "/skills/{name}", OperationID: "getSkill", Tags: cfg, Summary: "Read a skill",
			Description: "404 for an unknown name.", Op: platform.Op(s.Skill)},
		{Method: http.MethodPut, Path: base + "/skills/{name}", OperationID: "putSkill", Tags: cfg, Summary: "Create or replace a skill",
			Description: "name is 1-64 of a-z 0-9 - (as Agent Skills names). 201 when created, 200 when replaced.",
			Statuses:    []int{http.StatusCreated}, Op: platform.Op(s.PutSkill)},
		{Method: http.MethodPatch, Path: base + "/skills/{name}", OperationID: "patchSkill", Tags: cfg, Summary: "Change a skill's description or content",
			Description: "With version, applies only to that version (409 CONFLICT otherwise). 404 for an unknown name.",
			Op:          platform.Op(s.PatchSkill)},
		{Method: http.MethodDelete, Path: base + "/skills/{name}", OperationID: "deleteSkill", Tags: cfg, Summary: "Delete a skill",
			Description: "204; 404 for an unknown name.", Status: http.StatusNoContent, Op: platform.CommandOp(s.DeleteSkill)},
		{Method: http.MethodGet, Path: base + "/tools", OperationID: "listTools", Tags: cfg, Summary: "Tools available to agents",
			Description: "The builtin tools and the tools of enabled MCP servers (<server>_<tool>), without those the configuration's " +
				"tools map turns off (exact name, or a key ending in * for a prefix; the longest match wins) and those whose " +
				"permission is deny, each with the permission its use needs.",
			Op: platform.Op(s.Tools)},
		{Method: http.MethodPatch, Path: base + "/project/{projectID}", OperationID: "linkProject", Tags: cfg, Summary: "Link the workspace to a project",
			Description: "Replaces any earlier link; the link appears as project in the configuration.",
			Op:          platform.Op(s.LinkProject)},
		{Method: http.MethodGet, Path: base + "/permissions", OperationID: "listPermissions", Tags: cfg, Summary: "What agents may do without asking",
			Description: "Each action (edit, bash, webfetch, mcp) with its decision (allow, ask, deny) and whether it comes from " +
				"the configuration or the default. Change them with PATCH .../config, member permission.",
			Op: platform.Op(s.Permissions)},
		{Method: http.MethodGet, Path: base + "/questions", OperationID: "listQuestions", Tags: cfg, Summary: "Questions for the user",
			Description: "Pending questions by default, oldest first; status=all includes answered ones.",
			Op:          platform.Op(s.Questions)},
		{Method: http.MethodPost, Path: base + "/questions", OperationID: "askQuestion", Tags: cfg, Summary: "Ask the user a question",
			Description: "An agent records a question (with options, or free text); it is pending until answered. 201.",
			Status:      http.StatusCreated, Op: platform.Op(s.Ask)},
		{Method: http.MethodPost, Path: base + "/questions/{id}/answer", OperationID: "answerQuestion", Tags: cfg, Summary: "Answer a pending question",
			Description: "Once: a second answer is 409 CONFLICT. With options the answer must be one of them.",
			Op:          platform.Op(s.Answer)},
	}
}
