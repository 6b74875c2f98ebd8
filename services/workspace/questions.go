package workspace

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

const bucketQuestions = "questions" // ws/seq → Question

// Question is something an agent asks the user and waits on.
type Question struct {
	ID         string     `json:"id" required:"true"`
	Text       string     `json:"text" required:"true"`
	Options    []string   `json:"options" required:"true" doc:"the answers to choose from; empty for free text"`
	AskedBy    string     `json:"asked_by" required:"true"`
	Status     string     `json:"status" required:"true" enum:"pending,answered"`
	Answer     string     `json:"answer" required:"true"`
	AskedAt    time.Time  `json:"asked_at" required:"true"`
	AnsweredAt *time.Time `json:"answered_at"`
}

// QuestionList is the answer of GET .../questions.
type QuestionList struct {
	Questions []Question `json:"questions" required:"true" doc:"oldest first"`
}

// AskQuestion is the body of POST .../questions.
type AskQuestion struct {
	Text    string   `json:"text" required:"true" doc:"1-4000 characters"`
	Options []string `json:"options" doc:"up to 16 choices of 1-200 characters"`
	AskedBy string   `json:"asked_by" doc:"the agent or program asking"`
}

// Validate checks the question.
func (r *AskQuestion) Validate() error {
	if n := utf8.RuneCountInString(strings.TrimSpace(r.Text)); n < 1 || n > 4000 {
		return fault.Invalid("text", "must be 1-4000 characters")
	}
	if len(r.Options) > 16 {
		return fault.Invalid("options", "at most 16 choices")
	}
	for i, o := range r.Options {
		if n := utf8.RuneCountInString(strings.TrimSpace(o)); n < 1 || n > 200 {
			return fault.Invalid("options["+strconv.Itoa(i)+"]", "must be 1-200 characters")
		}
	}
	if len(r.AskedBy) > 128 {
		return fault.Invalid("asked_by", "must be at most 128 characters")
	}
	return nil
}

// AnswerQuestion is the body of POST .../questions/{id}/answer.
type AnswerQuestion struct {
	Answer string `json:"answer" required:"true" doc:"one of the options when the question has any"`
}

// Validate checks the answer is not blank.
func (r *AnswerQuestion) Validate() error {
	if n := utf8.RuneCountInString(strings.TrimSpace(r.Answer)); n < 1 || n > 4000 {
		return fault.Invalid("answer", "must be 1-4000 characters")
	}
	return nil
}

func questionID(seq uint64) string { return "q_" + strconv.FormatUint(seq, 10) }

// Questions lists questions in a status ("" for all), oldest first.
func (s *Service) Questions(ctx context.Context, q QuestionQuery) (QuestionList, error) {
	status := q.Status
	if status == "all" {
		status = ""
	}
	l, err := s.questions(ctx, q.Workspace, status)
	return QuestionList{Questions: l}, err
}

func (s *Service) questions(ctx context.Context, ws, status string) ([]Question, error) {
	out := []Question{}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var fs []store.Filter
		if status != "" {
			fs = append(fs, store.Where("status", store.Eq, status))
		}
		var err error
		out, err = listOf[Question](tx, questionTable, ws, false, fs...)
		return err
	})
	return out, fault.Wrap("list questions", err)
}

// Ask records a pending question.
func (s *Service) Ask(ctx context.Context, req QuestionAsk) (q Question, err error) {
	ws, in := req.Workspace, req.Body
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		seq, err := tx.NextSeq(bucketQuestions)
		if err != nil {
			return err
		}
		opts := in.Options
		if opts == nil {
			opts = []string{}
		}
		q = Question{ID: questionID(seq), Text: in.Text, Options: opts, AskedBy: in.AskedBy, Status: "pending", AskedAt: s.clock.Now()}
		return tx.Put(bucketQuestions, prefix(ws)+store.SeqKey(seq), q)
	})
	return q, fault.Wrap("ask a question", err)
}

// Answer answers a pending question once; a second answer is 409.
func (s *Service) Answer(ctx context.Context, req QuestionAnswer) (q Question, err error) {
	ws, id, in := req.Workspace, req.ID, req.Body
	n, perr := strconv.ParseUint(strings.TrimPrefix(id, "q_"), 10, 64)
	if !strings.HasPrefix(id, "q_") || perr != nil || n == 0 {
		return q, fault.NotFound("question", id)
	}
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		key := prefix(ws) + store.SeqKey(n)
		ok, err := tx.Get(bucketQuestions, key, &q)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("question", id)
		}
		if q.Status != "pending" {
			return &fault.Error{Code: fault.CodeConflict, Details: "status", Message: "status: the question " + id + " is already answered"}
		}
		if len(q.Options) > 0 && !slices.Contains(q.Options, in.Answer) {
			return fault.Invalid("answer", "must be one of the question's options: %s", strings.Join(q.Options, ", "))
		}
		now := s.clock.Now()
		q.Status, q.Answer, q.AnsweredAt = "answered", in.Answer, &now
		return tx.Put(bucketQuestions, key, q)
	})
	return q, fault.Wrap("answer a question", err)
}

// builtinTools are the tools an agent in the container has without MCP.
var builtinTools = []struct{ Name, Description, Permission string }{
	{"bash", "run a shell command in the container", "bash"},
	{"edit", "change part of a file", "edit"},
	{"glob", "find files by name pattern", ""},
	{"grep", "search file contents", ""},
	{"list", "list a directory", ""},
	{"memory", "read and change the workspace memory blocks and journal", ""},
	{"question", "ask the user a question and wait for the answer", ""},
	{"read", "read a file", ""},
	{"skill", "load a skill of the workspace", ""},
	{"todo", "keep a task list", ""},
	{"webfetch", "fetch a URL", "webfetch"},
	{"write", "write a whole file", "edit"},
}

// Tool is one available tool.
type Tool struct {
	Name        string `json:"name" required:"true" doc:"builtin name, or <server>_<tool> for an MCP server's tool"`
	Source      string `json:"source" required:"true" enum:"builtin,mcp"`
	Server      string `json:"server,omitempty" doc:"the MCP server (source mcp)"`
	Description string `json:"description" required:"true"`
	Permission  string `json:"permission" required:"true" enum:"allow,ask,deny" doc:"what using it needs, from the permission configuration"`
}

// ToolList is the answer of GET .../tools.
type ToolList struct {
	Tools []Tool `json:"tools" required:"true" doc:"the enabled tools by name"`
}

// Tools lists the tools available: the builtin ones and those of enabled
// MCP servers, minus what the configuration's tools map turns off (a key
// may end in * to match a prefix: "github_*": false), and minus tools
// whose permission is deny.
func (s *Service) Tools(ctx context.Context, ref WorkspaceRef) (ToolList, error) {
	ws := ref.Workspace
	var cfg Config
	var servers []MCPServer
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		if cfg, err = s.loadConfig(tx, ws); err != nil {
			return err
		}
		recs, err := listOf[mcpRecord](tx, mcpTable, ws, false)
		for _, r := range recs {
			servers = append(servers, r.MCPServer)
		}
		return err
	})
	if err != nil {
		return ToolList{}, fault.Wrap("list tools", err)
	}
	perm := map[string]string{"bash": cfg.Permission.Bash, "edit": cfg.Permission.Edit, "webfetch": cfg.Permission.WebFetch, "mcp": cfg.Permission.MCP}
	var all []Tool
	for _, b := range builtinTools {
		p := "allow"
		if b.Permission != "" {
			p = perm[b.Permission]
		}
		all = append(all, Tool{Name: b.Name, Source: "builtin", Description: b.Description, Permission: p})
	}
	for _, srv := range servers {
		if !srv.Enabled {
			continue
		}
		for _, t := range srv.Tools {
			all = append(all, Tool{Name: srv.Name + "_" + t, Source: "mcp", Server: srv.Name,
				Description: "tool " + t + " of MCP server " + srv.Name, Permission: perm["mcp"]})
		}
	}
	out := ToolList{Tools: []Tool{}}
	for _, t := range all {
		if t.Permission == "deny" || !toolEnabled(cfg.Tools, t.Name) {
			continue
		}
		out.Tools = append(out.Tools, t)
	}
	return out, nil
}

// toolEnabled applies the tools map: an exact key wins, else the longest
// matching "prefix*" key, else enabled.
func toolEnabled(m map[string]bool, name string) bool {
	if v, ok := m[name]; ok {
		return v
	}
	best, v := -1, true
	for k, on := range m {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(name, p) && len(p) > best {
			best, v = len(p), on
		}
	}
	return v
}
