package workspace

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"deckhand/platform/fault"
	"deckhand/platform/openapi"
)

// WorkspaceRef names a workspace.
type WorkspaceRef struct {
	Workspace string `path:"workspaceID" doc:"1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit"`
}

// ValidateParams checks the workspace id before any body is read.
func (r *WorkspaceRef) ValidateParams() error { return checkWorkspace(r.Workspace) }

// BlockRef names a memory block.
type BlockRef struct {
	WorkspaceRef
	Label string `path:"label" doc:"1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit"`
}

// ValidateParams checks the workspace id and the label.
func (r *BlockRef) ValidateParams() error {
	if err := checkWorkspace(r.Workspace); err != nil {
		return err
	}
	return checkLabel(r.Label)
}

// BlockPut is PUT .../memory/blocks/{label}.
type BlockPut struct {
	BlockRef
	Body PutBlock
}

// BlockPatch is PATCH .../memory/blocks/{label}.
type BlockPatch struct {
	BlockRef
	Body PatchBlock
}

// BlockAnswer is a written block: 201 when created, 200 when replaced.
type BlockAnswer struct {
	Status int
	Body   Block
}

// EntryRef names a journal entry.
type EntryRef struct {
	WorkspaceRef
	ID string `path:"id" doc:"the entry's id, j_N"`
}

// ChangeRef names a memory change.
type ChangeRef struct {
	WorkspaceRef
	ID string `path:"id" doc:"the change's id, h_N"`
}

// JournalQuery is GET .../memory/journal.
type JournalQuery struct {
	WorkspaceRef
	JournalFilter
}

// EntryAppend is POST .../memory/journal.
type EntryAppend struct {
	WorkspaceRef
	Body AppendEntry
}

// SearchInput is POST .../memory/journal/search.
type SearchInput struct {
	WorkspaceRef
	Body SearchRequest
}

// HistoryQuery is GET .../memory/history.
type HistoryQuery struct {
	WorkspaceRef
	HistoryFilter
}

// ConfigPatch is a JSON merge patch (RFC 7396) of the configuration.
type ConfigPatch map[string]any

var errNotPatch = fault.Invalid("body", "must be a JSON object (a merge patch)")

// UnmarshalJSON takes only an object.
func (p *ConfigPatch) UnmarshalJSON(raw []byte) error {
	if t := strings.TrimSpace(string(raw)); t == "" || t[0] != '{' {
		return errNotPatch
	}
	return json.Unmarshal(raw, (*map[string]any)(p))
}

// JSONSchema is the configuration's shape: what the patch is merged into
// and checked against.
func (ConfigPatch) JSONSchema() map[string]any { return openapi.Schema(Config{}) }

// ConfigPatchInput is PATCH .../config.
type ConfigPatchInput struct {
	WorkspaceRef
	Body ConfigPatch
}

// ProjectRef names the project a workspace links to.
type ProjectRef struct {
	WorkspaceRef
	ProjectID string `path:"projectID" doc:"1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit"`
}

// ValidateParams checks both ids.
func (r *ProjectRef) ValidateParams() error {
	if err := checkWorkspace(r.Workspace); err != nil {
		return err
	}
	if !idRule.MatchString(r.ProjectID) {
		return fault.Invalid("projectID", "must be 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit, got %q", r.ProjectID)
	}
	return nil
}

// ProjectLinkInput is PATCH .../project/{projectID}.
type ProjectLinkInput struct {
	ProjectRef
	Body LinkProject
}

// MCPAdd is POST .../mcp.
type MCPAdd struct {
	WorkspaceRef
	Body AddMCP
}

// MCPAnswer is an added MCP server: 201 when new, 200 when it replaced
// the server of that name.
type MCPAnswer struct {
	Status int
	Body   MCPServer
}

// SkillRef names a skill.
type SkillRef struct {
	WorkspaceRef
	Name string `path:"name" doc:"1-64 of a-z 0-9 - starting with a letter or digit"`
}

// ValidateParams checks the workspace id and the skill's name.
func (r *SkillRef) ValidateParams() error {
	if err := checkWorkspace(r.Workspace); err != nil {
		return err
	}
	return checkSkillName(r.Name)
}

// SkillPut is PUT .../skills/{name}.
type SkillPut struct {
	SkillRef
	Body PutSkill
}

// SkillPatch is PATCH .../skills/{name}.
type SkillPatch struct {
	SkillRef
	Body PatchSkill
}

// SkillAnswer is a written skill: 201 when created, 200 when replaced.
type SkillAnswer struct {
	Status int
	Body   Skill
}

// QuestionQuery is GET .../questions.
type QuestionQuery struct {
	WorkspaceRef
	Status string `query:"status" enum:"pending,answered,all" default:"pending" doc:"which questions"`
}

// QuestionAsk is POST .../questions.
type QuestionAsk struct {
	WorkspaceRef
	Body AskQuestion
}

// QuestionAnswer is POST .../questions/{id}/answer.
type QuestionAnswer struct {
	WorkspaceRef
	ID   string `path:"id" doc:"the question's id, q_N"`
	Body AnswerQuestion
}

func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

// ConfigSchema is the JSON schema PATCH .../config checks the merged
// document against.
func (s *Service) ConfigSchema(_ context.Context, _ WorkspaceRef) (map[string]any, error) {
	sch := openapi.Schema(Config{})
	sch["$schema"] = "https://spec.openapis.org/oas/3.0/schema/2021-09-28#/definitions/Schema"
	sch["title"] = "deckhand workspace configuration"
	return sch, nil
}
