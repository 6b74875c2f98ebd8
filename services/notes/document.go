package notes

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

const bucketDocs = "docs" // notebook/node → Document

// Block types.
var blockTypes = []string{"text", "heading", "list", "quote", "code", "math", "diagram", "divider"}

const (
	maxBlocks    = 1000
	maxBlockText = 100000
	maxTitle     = 256
)

// Block is one typed block of a document.
type Block struct {
	ID       string   `json:"id" doc:"1-64 of A-Z a-z 0-9 _ -, unique in the document; always present in a document, left out in an update op's block (the id stays)"`
	Type     string   `json:"type" required:"true" enum:"text,heading,list,quote,code,math,diagram,divider"`
	Text     string   `json:"text" doc:"text, heading, quote: the text; code: the source; math: TeX; diagram: the diagram statements"`
	Level    int      `json:"level,omitempty" doc:"heading: 1-6"`
	Language string   `json:"language,omitempty" doc:"code: the language (for the Markdown fence)"`
	Items    []string `json:"items,omitempty" doc:"list: the items"`
	Ordered  bool     `json:"ordered,omitempty" doc:"list: numbered"`
}

// Document is a node's document.
type Document struct {
	NotebookID string    `json:"notebook_id" required:"true"`
	NodeID     string    `json:"node_id" required:"true"`
	Title      string    `json:"title" required:"true"`
	Version    int64     `json:"version" required:"true" doc:"1 at creation, +1 per change; also the ETag \"N\""`
	Blocks     []Block   `json:"blocks" required:"true"`
	CreatedAt  time.Time `json:"created_at" required:"true"`
	UpdatedAt  time.Time `json:"updated_at" required:"true"`
}

// PutDocument is the body of PUT .../document: the whole document.
type PutDocument struct {
	Title   string  `json:"title" doc:"up to 256 characters"`
	Blocks  []Block `json:"blocks" required:"true" doc:"up to 1000 blocks"`
	Version *int64  `json:"version" minimum:"0" doc:"the version being replaced (or If-Match); 0 means the document must not exist yet"`
}

// Validate checks the whole document.
func (r *PutDocument) Validate() error {
	if r.Version != nil && *r.Version < 0 {
		return fault.Invalid("version", "must be 0 or more")
	}
	if utf8.RuneCountInString(r.Title) > maxTitle {
		return fault.Invalid("title", "must be at most %d characters", maxTitle)
	}
	if r.Blocks == nil {
		return fault.Invalid("blocks", "required (an empty list for an empty document)")
	}
	return checkBlocks("blocks", r.Blocks)
}

// Op is one edit of PATCH .../document.
type Op struct {
	Op    string `json:"op" required:"true" enum:"insert,update,delete,move"`
	ID    string `json:"id" doc:"update, delete, move: the block"`
	Block *Block `json:"block" doc:"insert: the new block; update: the block's new content (its id stays)"`
	Index *int   `json:"index" doc:"insert, move: position 0..len (default: the end)"`
}

// PatchDocument is the body of PATCH .../document: a title and/or edits,
// applied in order, all or none.
type PatchDocument struct {
	Title   *string `json:"title"`
	Ops     []Op    `json:"ops"`
	Version *int64  `json:"version" doc:"when given (or If-Match), the edits apply only to this version"`
}

// Validate checks the patch's shape; references to blocks are checked
// against the document.
func (r *PatchDocument) Validate() error {
	if r.Title == nil && len(r.Ops) == 0 {
		return fault.Invalid("ops", "give title or at least one op")
	}
	if r.Title != nil && utf8.RuneCountInString(*r.Title) > maxTitle {
		return fault.Invalid("title", "must be at most %d characters", maxTitle)
	}
	if len(r.Ops) > maxBlocks {
		return fault.Invalid("ops", "at most %d ops", maxBlocks)
	}
	for i, op := range r.Ops {
		f := "ops[" + strconv.Itoa(i) + "]"
		switch op.Op {
		case "insert":
			if op.Block == nil {
				return fault.Invalid(f+".block", "required for insert")
			}
			if err := checkBlock(f+".block", *op.Block); err != nil {
				return err
			}
		case "update":
			if op.ID == "" {
				return fault.Invalid(f+".id", "required for update")
			}
			if op.Block == nil {
				return fault.Invalid(f+".block", "required for update")
			}
			b := *op.Block
			b.ID = cmp.Or(b.ID, op.ID)
			if b.ID != op.ID {
				return fault.Invalid(f+".block.id", "must be %q (a block keeps its id) or left out", op.ID)
			}
			if err := checkBlock(f+".block", b); err != nil {
				return err
			}
		case "delete", "move":
			if op.ID == "" {
				return fault.Invalid(f+".id", "required for %s", op.Op)
			}
		default:
			return fault.Invalid(f+".op", "must be insert, update, delete or move, got %q", op.Op)
		}
		if op.Index != nil && *op.Index < 0 {
			return fault.Invalid(f+".index", "must be 0 or more, got %d", *op.Index)
		}
	}
	return nil
}

func checkBlocks(field string, bs []Block) error {
	if len(bs) > maxBlocks {
		return fault.Invalid(field, "at most %d blocks, got %d", maxBlocks, len(bs))
	}
	seen := map[string]bool{}
	for i, b := range bs {
		f := field + "[" + strconv.Itoa(i) + "]"
		if err := checkBlock(f, b); err != nil {
			return err
		}
		if seen[b.ID] {
			return fault.Invalid(f+".id", "%q is used by an earlier block", b.ID)
		}
		seen[b.ID] = true
	}
	return nil
}

func checkBlock(f string, b Block) error {
	if !blockIDOK(b.ID) {
		return fault.Invalid(f+".id", "must be 1-64 of A-Z a-z 0-9 _ -, got %q", b.ID)
	}
	if !slices.Contains(blockTypes, b.Type) {
		return fault.Invalid(f+".type", "must be one of %s, got %q", strings.Join(blockTypes, ", "), b.Type)
	}
	if utf8.RuneCountInString(b.Text) > maxBlockText {
		return fault.Invalid(f+".text", "must be at most %d characters", maxBlockText)
	}
	if b.Type == "heading" && (b.Level < 1 || b.Level > 6) {
		return fault.Invalid(f+".level", "a heading's level must be 1-6, got %d", b.Level)
	}
	if b.Type != "heading" && b.Level != 0 {
		return fault.Invalid(f+".level", "only for heading blocks")
	}
	if b.Type != "code" && b.Language != "" {
		return fault.Invalid(f+".language", "only for code blocks")
	}
	if b.Type == "code" && strings.ContainsAny(b.Language, " \t\n`") {
		return fault.Invalid(f+".language", "must be one word without backquotes")
	}
	if b.Type != "list" && (len(b.Items) > 0 || b.Ordered) {
		return fault.Invalid(f+".items", "only for list blocks")
	}
	if b.Type == "list" && b.Text != "" {
		return fault.Invalid(f+".text", "a list block has items, not text")
	}
	for j, it := range b.Items {
		if utf8.RuneCountInString(it) > maxBlockText {
			return fault.Invalid(f+".items["+strconv.Itoa(j)+"]", "must be at most %d characters", maxBlockText)
		}
	}
	if b.Type == "diagram" {
		if _, err := parseDiagram(b.Text); err != nil {
			return fault.Invalid(f+".text", "%s", err.Error())
		}
	}
	if b.Type == "divider" && b.Text != "" {
		return fault.Invalid(f+".text", "a divider has no text")
	}
	return nil
}

func blockIDOK(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func docKey(notebook, node string) string { return notebook + "/" + node }

// NodeRef names a notebook's node.
type NodeRef struct {
	Notebook string `path:"notebookId" doc:"1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit"`
	Node     string `path:"nodeId" doc:"1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit"`
}

// ValidateParams checks both ids before any body is read.
func (r *NodeRef) ValidateParams() error {
	if err := checkID("notebookId", r.Notebook); err != nil {
		return err
	}
	return checkID("nodeId", r.Node)
}

// DocumentPut is PUT .../document.
type DocumentPut struct {
	NodeRef
	IfMatch string `header:"If-Match" doc:"the version being changed, \"N\" (the ETag); a mismatch is 409 VERSION_CONFLICT"`
	Body    PutDocument
}

// DocumentPatch is PATCH .../document.
type DocumentPatch struct {
	NodeRef
	IfMatch string `header:"If-Match" doc:"the version being changed, \"N\" (the ETag); a mismatch is 409 VERSION_CONFLICT"`
	Body    PatchDocument
}

// DocumentAnswer is a document with its version as the ETag: 201 when a
// PUT created it, 200 otherwise.
type DocumentAnswer struct {
	ETag   string `header:"ETag" doc:"the document's version, \"N\""`
	Status int
	Body   Document
}

func answer(d Document, status int) DocumentAnswer {
	return DocumentAnswer{ETag: `"` + strconv.FormatInt(d.Version, 10) + `"`, Status: status, Body: d}
}

// expected reads the version a write names: If-Match ("N", W/"N" or N)
// and the body's version must agree when both are given.
func expected(ifMatch string, body *int64) (*int64, error) {
	h := strings.TrimSpace(ifMatch)
	if h == "" {
		return body, nil
	}
	v, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(h, "W/"), `"`), 10, 64)
	if err != nil || v < 0 {
		return nil, fault.Invalid("If-Match", "must be a document version \"N\" (the ETag), got %q", h)
	}
	if body != nil && *body != v {
		return nil, fault.Invalid("version", "is %d but If-Match says %d", *body, v)
	}
	return &v, nil
}

// Get reads a node's document.
func (s *Service) Get(ctx context.Context, ref NodeRef) (DocumentAnswer, error) {
	d, err := s.get(ctx, ref.Notebook, ref.Node)
	if err != nil {
		return DocumentAnswer{}, err
	}
	return answer(d, http.StatusOK), nil
}

func (s *Service) get(ctx context.Context, notebook, node string) (Document, error) {
	var d Document
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		ok, err := tx.Get(bucketDocs, docKey(notebook, node), &d)
		if err == nil && !ok {
			return fault.NotFound("node", notebook+"/"+node)
		}
		return err
	})
	return d, fault.Wrap("read a document", err)
}

func conflict(have int64, want int64) error {
	return &fault.Error{Code: CodeVersionConflict, Details: "version",
		Message: "version: the document is at version " + strconv.FormatInt(have, 10) + ", not " + strconv.FormatInt(want, 10) +
			"; read it again and apply your change to that version"}
}

// Put creates or replaces a document: 201 when created, 200 when
// replaced.
func (s *Service) Put(ctx context.Context, req DocumentPut) (DocumentAnswer, error) {
	exp, err := expected(req.IfMatch, req.Body.Version)
	if err != nil {
		return DocumentAnswer{}, err
	}
	d, created, err := s.put(ctx, req.Notebook, req.Node, req.Body, exp)
	if err != nil {
		return DocumentAnswer{}, err
	}
	if created {
		return answer(d, http.StatusCreated), nil
	}
	return answer(d, http.StatusOK), nil
}

// put creates or replaces a document. expect is the version the caller
// replaces (nil: none named).
func (s *Service) put(ctx context.Context, notebook, node string, in PutDocument, expect *int64) (d Document, created bool, err error) {
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		var old Document
		exists, err := tx.Get(bucketDocs, docKey(notebook, node), &old)
		if err != nil {
			return err
		}
		switch {
		case expect != nil && !exists && *expect != 0:
			return conflict(0, *expect)
		case expect != nil && exists && *expect != old.Version:
			return conflict(old.Version, *expect)
		case expect == nil && exists:
			return &fault.Error{Code: fault.CodePreconditionRequired, Details: "version",
				Message: "version: replacing an existing document needs its version (If-Match: \"" + strconv.FormatInt(old.Version, 10) +
					"\" or \"version\" in the body), so no edit is overwritten unseen"}
		}
		now := s.clock.Now()
		d = Document{NotebookID: notebook, NodeID: node, Title: in.Title, Blocks: in.Blocks, Version: 1, CreatedAt: now, UpdatedAt: now}
		if exists {
			d.Version, d.CreatedAt = old.Version+1, old.CreatedAt
		}
		created = !exists
		return tx.Put(bucketDocs, docKey(notebook, node), d)
	})
	return d, created, fault.Wrap("write a document", err)
}

// Patch applies a title change and block edits, in order, all or none.
func (s *Service) Patch(ctx context.Context, req DocumentPatch) (DocumentAnswer, error) {
	exp, err := expected(req.IfMatch, req.Body.Version)
	if err != nil {
		return DocumentAnswer{}, err
	}
	d, err := s.patch(ctx, req.Notebook, req.Node, req.Body, exp)
	if err != nil {
		return DocumentAnswer{}, err
	}
	return answer(d, http.StatusOK), nil
}

func (s *Service) patch(ctx context.Context, notebook, node string, in PatchDocument, expect *int64) (d Document, err error) {
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		ok, err := tx.Get(bucketDocs, docKey(notebook, node), &d)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("node", notebook+"/"+node)
		}
		if expect != nil && *expect != d.Version {
			return conflict(d.Version, *expect)
		}
		if in.Title != nil {
			d.Title = *in.Title
		}
		blocks := append([]Block(nil), d.Blocks...)
		for i, op := range in.Ops {
			f := "ops[" + strconv.Itoa(i) + "]"
			if blocks, err = apply(f, blocks, op); err != nil {
				return err
			}
		}
		if len(blocks) > maxBlocks {
			return fault.Invalid("ops", "the document would have %d blocks, over %d", len(blocks), maxBlocks)
		}
		if blocks == nil {
			blocks = []Block{}
		}
		d.Blocks = blocks
		d.Version++
		d.UpdatedAt = s.clock.Now()
		return tx.Put(bucketDocs, docKey(notebook, node), d)
	})
	return d, fault.Wrap("change a document", err)
}

func find(bs []Block, id string) int {
	for i, b := range bs {
		if b.ID == id {
			return i
		}
	}
	return -1
}

func position(f string, idx *int, n int) (int, error) {
	if idx == nil {
		return n, nil
	}
	if *idx > n {
		return 0, fault.Invalid(f+".index", "must be 0-%d here, got %d", n, *idx)
	}
	return *idx, nil
}

func apply(f string, bs []Block, op Op) ([]Block, error) {
	switch op.Op {
	case "insert":
		if find(bs, op.Block.ID) >= 0 {
			return nil, fault.Invalid(f+".block.id", "%q is already a block of the document", op.Block.ID)
		}
		at, err := position(f, op.Index, len(bs))
		if err != nil {
			return nil, err
		}
		return append(bs[:at], append([]Block{*op.Block}, bs[at:]...)...), nil
	}
	i := find(bs, op.ID)
	if i < 0 {
		return nil, fault.Invalid(f+".id", "no block %q in the document", op.ID)
	}
	switch op.Op {
	case "update":
		b := *op.Block
		b.ID = op.ID
		bs[i] = b
	case "delete":
		bs = append(bs[:i], bs[i+1:]...)
	case "move":
		b := bs[i]
		bs = append(bs[:i], bs[i+1:]...)
		at, err := position(f, op.Index, len(bs))
		if err != nil {
			return nil, err
		}
		bs = append(bs[:at], append([]Block{b}, bs[at:]...)...)
	}
	return bs, nil
}

// BlockImage is GET .../blocks/{blockId}/svg.
type BlockImage struct {
	NodeRef
	Block string `path:"blockId" doc:"the block's id"`
	Width int    `query:"width" minimum:"120" maximum:"4000" default:"800" doc:"width of the image in pixels"`
}

// SVGImage is a rendered block: the drawing, sandboxed (the text in it is
// the user's, and an SVG opened as a page could script on the agent's origin).
type SVGImage struct {
	CSP     string `header:"Content-Security-Policy" doc:"always the sandboxing policy"`
	NoSniff string `header:"X-Content-Type-Options" doc:"always nosniff"`
	Body    []byte
}

// BlockSVG renders one block of a document as SVG.
func (s *Service) BlockSVG(ctx context.Context, in BlockImage) (SVGImage, error) {
	d, err := s.get(ctx, in.Notebook, in.Node)
	if err != nil {
		return SVGImage{}, err
	}
	i := find(d.Blocks, in.Block)
	if i < 0 {
		return SVGImage{}, fault.NotFound("block", in.Block)
	}
	svg, err := renderSVG(d.Blocks[i], in.Width)
	if err != nil {
		return SVGImage{}, fault.Invalid("blockId", "the block does not render: %s", err.Error())
	}
	return SVGImage{CSP: platform.SandboxCSP, NoSniff: "nosniff", Body: svg}, nil
}
