package workspace

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

const base = "/api/v1/workspaces/{workspaceID}"

// Routes is the service's route table.
func (s *Service) Routes() []platform.Route {
	mem, cfg := []string{"memory"}, []string{"config"}
	limit := func(def string, max float64) platform.Param {
		return platform.Param{Name: "limit", Type: "integer", Range: &platform.Range{Min: 1, Max: max}, Default: def, Description: "at most this many"}
	}
	return []platform.Route{
		{Method: http.MethodGet, Path: base + "/memory/blocks", Tags: mem, Summary: "List memory blocks by label",
			Response: BlockList{}, Handler: s.handleBlocks},
		{Method: http.MethodGet, Path: base + "/memory/blocks/{label}", Tags: mem, Summary: "Read a memory block",
			Description: "404 for an unknown label.", Response: Block{}, Handler: s.handleBlock},
		{Method: http.MethodPut, Path: base + "/memory/blocks/{label}", Tags: mem, Summary: "Create or replace a memory block",
			Description: "201 when created, 200 when replaced. label is 1-64 of A-Z a-z 0-9 . _ -. value must fit the block's limit " +
				"(characters, i.e. Unicode code points; default the memory configuration's default_block_limit, at most its " +
				"max_block_limit); a workspace holds at most max_blocks blocks. The change is kept in the history.",
			Body: PutBlock{}, Response: Block{}, Handler: s.handlePutBlock},
		{Method: http.MethodPatch, Path: base + "/memory/blocks/{label}", Tags: mem, Summary: "Change fields of a memory block",
			Description: "Changes the fields given; append adds text at the end of value. With version, the change applies only to " +
				"that version (409 CONFLICT otherwise). A value over the limit is 400 naming value (or append). Kept in the history.",
			Body: PatchBlock{}, Response: Block{}, Handler: s.handlePatchBlock},
		{Method: http.MethodDelete, Path: base + "/memory/blocks/{label}", Tags: mem, Summary: "Delete a memory block",
			Description: "204; the block stays readable in the history. 404 for an unknown label.", Status: http.StatusNoContent,
			Handler: s.handleDeleteBlock},
		{Method: http.MethodGet, Path: base + "/memory/journal", Tags: mem, Summary: "List journal entries, newest first",
			Query: []platform.Param{limit("50", 1000),
				{Name: "before", Description: "an entry id (the answer's next): entries older than it"},
				{Name: "tag", Description: "only entries with this tag"}},
			Response: EntryList{}, Handler: s.handleJournal},
		{Method: http.MethodPost, Path: base + "/memory/journal", Tags: mem, Summary: "Append a journal entry",
			Description: "201 with the entry (id j_N, increasing). content is indexed for search at once; at most the memory " +
				"configuration's max_entry_chars characters.",
			Body: AppendEntry{}, Response: Entry{}, Status: http.StatusCreated, Handler: s.handleAppend},
		{Method: http.MethodGet, Path: base + "/memory/journal/count", Tags: mem, Summary: "Count journal entries",
			Response: Count{}, Handler: s.handleCount},
		{Method: http.MethodGet, Path: base + "/memory/journal/{id}", Tags: mem, Summary: "Read a journal entry",
			Description: "404 for an unknown id.", Response: Entry{}, Handler: s.handleEntry},
		{Method: http.MethodDelete, Path: base + "/memory/journal/{id}", Tags: mem, Summary: "Delete a journal entry",
			Description: "204; the entry leaves the index too. 404 for an unknown id.", Status: http.StatusNoContent, Handler: s.handleDeleteEntry},
		{Method: http.MethodPost, Path: base + "/memory/journal/search", Tags: mem, Summary: "Full-text search of the journal, BM25-ranked",
			Description: "Entries containing any of the query's words (content and tags, tokenized as the service description " +
				"says) ranked by Okapi BM25 with the memory configuration's k1 and b and idf = ln(1 + (N - df + 0.5)/(df + 0.5)); " +
				"equal scores rank the newer entry first. limit 1-100 (default 10).",
			Body: SearchRequest{}, Response: SearchResult{}, Handler: s.handleSearch},
		{Method: http.MethodGet, Path: base + "/memory/history", Tags: mem, Summary: "Memory block changes, newest first",
			Query:    []platform.Param{limit("50", 1000), {Name: "label", Description: "only changes of this block"}},
			Response: HistoryList{}, Handler: s.handleHistory},
		{Method: http.MethodGet, Path: base + "/memory/history/{id}", Tags: mem, Summary: "Read one change",
			Description: "The block before and after the change. 404 for an unknown id.", Response: Change{}, Handler: s.handleChange},
		{Method: http.MethodGet, Path: base + "/memory/config", Tags: mem, Summary: "Memory configuration and counts",
			Description: "The memory section of the workspace configuration (change it with PATCH .../config, member memory), " +
				"with the counts of blocks and journal entries and the ranking and tokenizer used.",
			Response: MemoryConfigView{}, Handler: s.handleMemoryConfig},

		{Method: http.MethodGet, Path: base + "/config", Tags: cfg, Summary: "Read the workspace configuration",
			Description: "The document with defaults filled in. Provider keys are never included: api_key_set says one is stored.",
			Response:    ConfigView{}, Handler: s.handleConfig},
		{Method: http.MethodPatch, Path: base + "/config", Tags: cfg, Summary: "Change the configuration with a JSON merge patch",
			Description: "RFC 7396: members given replace, objects merge, null removes (providers.x.api_key: null removes a stored " +
				"key; leaving api_key out keeps it). The result is checked against the schema (this body's) and its rules; a " +
				"broken rule is 400 INVALID naming the field by its path (providers.openai.base_url, memory.search.b) and nothing " +
				"is written. An integer version member, when given, must be the current version (409 CONFLICT otherwise). project " +
				"and api_key_set are read-only. api_key is sealed at rest and never answered.",
			Body: Config{}, Response: ConfigView{}, Handler: s.handlePatchConfig},
		{Method: http.MethodGet, Path: base + "/config/schema", Tags: cfg, Summary: "The configuration's JSON schema",
			Description: "The schema PATCH .../config checks the merged document against (the shape; the rules beside it, such as " +
				"model naming a configured provider, are in the members' descriptions), for editors and clients that validate first.",
			Handler: s.handleSchema},
		{Method: http.MethodGet, Path: base + "/config/providers", Tags: cfg, Summary: "Configured model providers",
			Description: "The providers of the configuration with their models and whether each is connected (a key stored, or in " +
				"the environment variable of its type), and the default model per provider. Keys are never answered.",
			Response: ConfigProviders{}, Handler: s.handleConfigProviders},
		{Method: http.MethodGet, Path: base + "/providers", Tags: cfg, Summary: "Every known and configured provider",
			Description: "Every provider type the service knows (anthropic, google, groq, mistral, ollama, openai, " +
				"openai-compatible, openrouter) and every configured provider, with connected and the ids of the connected ones. " +
				"A type counts as connected without configuration when its key variable (OPENAI_API_KEY ...) is set in the " +
				"agent's environment. Keys are never answered.",
			Response: ProviderList{}, Handler: s.handleProviders},
		{Method: http.MethodGet, Path: base + "/mcp", Tags: cfg, Summary: "List MCP servers",
			Description: "Environment and header values are never answered, only their names.", Response: MCPList{}, Handler: s.handleMCP},
		{Method: http.MethodPost, Path: base + "/mcp", Tags: cfg, Summary: "Add an MCP server",
			Description: "A local server (command run with MCP on stdio) or a remote one (url). 201 when added, 200 when it replaced " +
				"the server of that name. Environment and header values are sealed at rest and never answered. The service keeps " +
				"the configuration; it does not connect to servers, so tools lists the tool names given here.",
			Body: AddMCP{}, Response: MCPServer{}, Status: http.StatusCreated, Handler: s.handleAddMCP},
		{Method: http.MethodGet, Path: base + "/skills", Tags: cfg, Summary: "List skills by name",
			Response: SkillList{}, Handler: s.handleSkills},
		{Method: http.MethodGet, Path: base + "/skills/{name}", Tags: cfg, Summary: "Read a skill",
			Description: "404 for an unknown name.", Response: Skill{}, Handler: s.handleSkill},
		{Method: http.MethodPut, Path: base + "/skills/{name}", Tags: cfg, Summary: "Create or replace a skill",
			Description: "name is 1-64 of a-z 0-9 - (as Agent Skills names). 201 when created, 200 when replaced.",
			Body:        PutSkill{}, Response: Skill{}, Handler: s.handlePutSkill},
		{Method: http.MethodPatch, Path: base + "/skills/{name}", Tags: cfg, Summary: "Change a skill's description or content",
			Description: "With version, applies only to that version (409 CONFLICT otherwise). 404 for an unknown name.",
			Body:        PatchSkill{}, Response: Skill{}, Handler: s.handlePatchSkill},
		{Method: http.MethodDelete, Path: base + "/skills/{name}", Tags: cfg, Summary: "Delete a skill",
			Description: "204; 404 for an unknown name.", Status: http.StatusNoContent, Handler: s.handleDeleteSkill},
		{Method: http.MethodGet, Path: base + "/tools", Tags: cfg, Summary: "Tools available to agents",
			Description: "The builtin tools and the tools of enabled MCP servers (<server>_<tool>), without those the configuration's " +
				"tools map turns off (exact name, or a key ending in * for a prefix; the longest match wins) and those whose " +
				"permission is deny, each with the permission its use needs.",
			Response: ToolList{}, Handler: s.handleTools},
		{Method: http.MethodPatch, Path: base + "/project/{projectID}", Tags: cfg, Summary: "Link the workspace to a project",
			Description: "Replaces any earlier link; the link appears as project in the configuration.",
			Body:        LinkProject{}, Response: ProjectLink{}, Handler: s.handleLinkProject},
		{Method: http.MethodGet, Path: base + "/permissions", Tags: cfg, Summary: "What agents may do without asking",
			Description: "Each action (edit, bash, webfetch, mcp) with its decision (allow, ask, deny) and whether it comes from " +
				"the configuration or the default. Change them with PATCH .../config, member permission.",
			Response: PermissionList{}, Handler: s.handlePermissions},
		{Method: http.MethodGet, Path: base + "/questions", Tags: cfg, Summary: "Questions for the user",
			Description: "Pending questions by default, oldest first; status=all includes answered ones.",
			Query:       []platform.Param{{Name: "status", Enum: []string{"pending", "answered", "all"}, Default: "pending", Description: "which questions"}},
			Response:    QuestionList{}, Handler: s.handleQuestions},
		{Method: http.MethodPost, Path: base + "/questions", Tags: cfg, Summary: "Ask the user a question",
			Description: "An agent records a question (with options, or free text); it is pending until answered. 201.",
			Body:        AskQuestion{}, Response: Question{}, Status: http.StatusCreated, Handler: s.handleAsk},
		{Method: http.MethodPost, Path: base + "/questions/{id}/answer", Tags: cfg, Summary: "Answer a pending question",
			Description: "Once: a second answer is 409 CONFLICT. With options the answer must be one of them.",
			Body:        AnswerQuestion{}, Response: Question{}, Handler: s.handleAnswer},
	}
}

func ws(c fiber.Ctx) (string, error) {
	id := c.Params("workspaceID")
	return id, checkWorkspace(id)
}

// wsAnd reads the workspace and a second path parameter checked by check.
func wsAnd(c fiber.Ctx, name string, check func(string) error) (string, string, error) {
	w, err := ws(c)
	if err != nil {
		return "", "", err
	}
	v := c.Params(name)
	if check != nil {
		if err := check(v); err != nil {
			return "", "", err
		}
	}
	return w, v, nil
}

func created(c fiber.Ctx, isNew bool, v any) error {
	if isNew {
		return platform.JSON(c, http.StatusCreated, v)
	}
	return platform.JSON(c, http.StatusOK, v)
}

func (s *Service) handleBlocks(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	bs, err := s.Blocks(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, BlockList{Blocks: bs})
}

func (s *Service) handleBlock(c fiber.Ctx) error {
	w, label, err := wsAnd(c, "label", checkLabel)
	if err != nil {
		return err
	}
	b, err := s.Block(c.Context(), w, label)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, b)
}

func (s *Service) handlePutBlock(c fiber.Ctx) error {
	w, label, err := wsAnd(c, "label", checkLabel)
	if err != nil {
		return err
	}
	var in PutBlock
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	b, isNew, err := s.PutBlock(c.Context(), w, label, in)
	if err != nil {
		return err
	}
	return created(c, isNew, b)
}

func (s *Service) handlePatchBlock(c fiber.Ctx) error {
	w, label, err := wsAnd(c, "label", checkLabel)
	if err != nil {
		return err
	}
	var in PatchBlock
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	b, err := s.PatchBlock(c.Context(), w, label, in)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, b)
}

func (s *Service) handleDeleteBlock(c fiber.Ctx) error {
	w, label, err := wsAnd(c, "label", checkLabel)
	if err != nil {
		return err
	}
	if err := s.DeleteBlock(c.Context(), w, label); err != nil {
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Service) handleJournal(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	q := platform.QueryOf(c)
	l, err := s.Journal(c.Context(), w, JournalFilter{Before: q.String("before"), Tag: q.String("tag"), Limit: int(q.Int("limit"))})
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, l)
}

func (s *Service) handleAppend(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	var in AppendEntry
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	e, err := s.Append(c.Context(), w, in)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusCreated, e)
}

func (s *Service) handleCount(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	n, err := s.CountEntries(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, Count{Count: n})
}

func (s *Service) handleEntry(c fiber.Ctx) error {
	w, id, err := wsAnd(c, "id", nil)
	if err != nil {
		return err
	}
	e, err := s.JournalEntry(c.Context(), w, id)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, e)
}

func (s *Service) handleDeleteEntry(c fiber.Ctx) error {
	w, id, err := wsAnd(c, "id", nil)
	if err != nil {
		return err
	}
	if err := s.DeleteEntry(c.Context(), w, id); err != nil {
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Service) handleSearch(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	var in SearchRequest
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	r, err := s.Search(c.Context(), w, in)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, r)
}

func (s *Service) handleHistory(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	q := platform.QueryOf(c)
	h, err := s.History(c.Context(), w, HistoryFilter{Label: q.String("label"), Limit: int(q.Int("limit"))})
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, HistoryList{Changes: h})
}

func (s *Service) handleChange(c fiber.Ctx) error {
	w, id, err := wsAnd(c, "id", nil)
	if err != nil {
		return err
	}
	ch, err := s.HistoryEntry(c.Context(), w, id)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, ch)
}

func (s *Service) handleMemoryConfig(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	v, err := s.MemoryConfig(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, v)
}

func (s *Service) handleConfig(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	v, err := s.GetConfig(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, v)
}

func (s *Service) handlePatchConfig(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	var patch map[string]any
	body := strings.TrimSpace(string(c.Body()))
	if body == "" || body[0] != '{' {
		return platform.Invalid("body", "must be a JSON object (a merge patch)")
	}
	if err := platform.DecodeBytes([]byte(body), &patch); err != nil {
		return err
	}
	if patch == nil {
		return platform.Invalid("body", "must be a JSON object (a merge patch)")
	}
	v, err := s.PatchConfig(c.Context(), w, patch)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, v)
}

func (s *Service) handleSchema(c fiber.Ctx) error {
	if _, err := ws(c); err != nil {
		return err
	}
	sch := platform.Schema(Config{})
	sch["$schema"] = "https://spec.openapis.org/oas/3.0/schema/2021-09-28#/definitions/Schema"
	sch["title"] = "deckhand workspace configuration"
	return platform.JSON(c, http.StatusOK, sch)
}

func (s *Service) handleConfigProviders(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	v, err := s.ConfigProviders(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, v)
}

func (s *Service) handleProviders(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	v, err := s.Providers(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, v)
}

func (s *Service) handleMCP(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	l, err := s.MCPServers(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, MCPList{Servers: l})
}

func (s *Service) handleAddMCP(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	var in AddMCP
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	srv, isNew, err := s.AddMCP(c.Context(), w, in)
	if err != nil {
		return err
	}
	return created(c, isNew, srv)
}

func (s *Service) handleSkills(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	l, err := s.Skills(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, SkillList{Skills: l})
}

func (s *Service) handleSkill(c fiber.Ctx) error {
	w, name, err := wsAnd(c, "name", checkSkillName)
	if err != nil {
		return err
	}
	k, err := s.Skill(c.Context(), w, name)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, k)
}

func (s *Service) handlePutSkill(c fiber.Ctx) error {
	w, name, err := wsAnd(c, "name", checkSkillName)
	if err != nil {
		return err
	}
	var in PutSkill
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	k, isNew, err := s.PutSkill(c.Context(), w, name, in)
	if err != nil {
		return err
	}
	return created(c, isNew, k)
}

func (s *Service) handlePatchSkill(c fiber.Ctx) error {
	w, name, err := wsAnd(c, "name", checkSkillName)
	if err != nil {
		return err
	}
	var in PatchSkill
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	k, err := s.PatchSkill(c.Context(), w, name, in)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, k)
}

func (s *Service) handleDeleteSkill(c fiber.Ctx) error {
	w, name, err := wsAnd(c, "name", checkSkillName)
	if err != nil {
		return err
	}
	if err := s.DeleteSkill(c.Context(), w, name); err != nil {
		return err
	}
	return c.SendStatus(http.StatusNoContent)
}

func (s *Service) handleTools(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	l, err := s.Tools(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, l)
}

func (s *Service) handleLinkProject(c fiber.Ctx) error {
	w, pid, err := wsAnd(c, "projectID", nil)
	if err != nil {
		return err
	}
	var in LinkProject
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	l, err := s.LinkProject(c.Context(), w, pid, in)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, l)
}

func (s *Service) handlePermissions(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	l, err := s.Permissions(c.Context(), w)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, l)
}

func (s *Service) handleQuestions(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	status := platform.QueryOf(c).String("status")
	if status == "all" {
		status = ""
	}
	l, err := s.Questions(c.Context(), w, status)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, QuestionList{Questions: l})
}

func (s *Service) handleAsk(c fiber.Ctx) error {
	w, err := ws(c)
	if err != nil {
		return err
	}
	var in AskQuestion
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	q, err := s.Ask(c.Context(), w, in)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusCreated, q)
}

func (s *Service) handleAnswer(c fiber.Ctx) error {
	w, id, err := wsAnd(c, "id", nil)
	if err != nil {
		return err
	}
	var in AnswerQuestion
	if err := platform.Decode(c, &in); err != nil {
		return err
	}
	q, err := s.Answer(c.Context(), w, id, in)
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, q)
}
