package workspace

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

const (
	bucketBlocks  = "blocks"  // ws/label → Block
	bucketHistory = "history" // ws/seq → Change
)

// Block is one memory block: a labelled value an agent keeps in context.
type Block struct {
	Label       string    `json:"label" required:"true"`
	Value       string    `json:"value" required:"true"`
	Description string    `json:"description" required:"true" doc:"what the block is for, so an agent knows when to read or change it"`
	Limit       int       `json:"limit" required:"true" doc:"the most characters (Unicode code points) value may hold"`
	Version     int64     `json:"version" required:"true" doc:"1 at creation, +1 on every change"`
	CreatedAt   time.Time `json:"created_at" required:"true"`
	UpdatedAt   time.Time `json:"updated_at" required:"true"`
}

// BlockList is the answer of GET .../memory/blocks.
type BlockList struct {
	Blocks []Block `json:"blocks" required:"true"`
}

// PutBlock is the body of PUT .../memory/blocks/{label}: the whole block.
type PutBlock struct {
	Value       string `json:"value" required:"true"`
	Description string `json:"description"`
	Limit       *int   `json:"limit" doc:"default: the memory configuration's default_block_limit"`
}

// Validate checks lengths that do not depend on the configuration.
func (r *PutBlock) Validate() error {
	if r.Limit != nil && *r.Limit < 1 {
		return fault.Invalid("limit", "must be at least 1, got %d", *r.Limit)
	}
	if utf8.RuneCountInString(r.Description) > maxDescription {
		return fault.Invalid("description", "must be at most %d characters", maxDescription)
	}
	return nil
}

// PatchBlock is the body of PATCH .../memory/blocks/{label}: the fields
// given change. append adds text at the end of value (after a newline when
// value is not empty) in the same step, as agents add to a block.
type PatchBlock struct {
	Value       *string `json:"value"`
	Append      *string `json:"append" doc:"text added at the end of value, after a newline when value is not empty"`
	Description *string `json:"description"`
	Limit       *int    `json:"limit"`
	Version     *int64  `json:"version" doc:"when given, the change applies only to this version (409 CONFLICT otherwise)"`
}

// Validate checks the patch.
func (r *PatchBlock) Validate() error {
	if r.Value != nil && r.Append != nil {
		return fault.Invalid("append", "cannot be given together with value")
	}
	if r.Value == nil && r.Append == nil && r.Description == nil && r.Limit == nil {
		return fault.Invalid("body", "give at least one of value, append, description, limit")
	}
	if r.Limit != nil && *r.Limit < 1 {
		return fault.Invalid("limit", "must be at least 1, got %d", *r.Limit)
	}
	if r.Description != nil && utf8.RuneCountInString(*r.Description) > maxDescription {
		return fault.Invalid("description", "must be at most %d characters", maxDescription)
	}
	return nil
}

const maxDescription = 2000

// Change is one entry of the memory history.
type Change struct {
	ID     string    `json:"id" required:"true"`
	Label  string    `json:"label" required:"true"`
	Action string    `json:"action" required:"true" enum:"created,updated,deleted"`
	Before *Block    `json:"before" doc:"the block before the change (null when created)"`
	After  *Block    `json:"after" doc:"the block after the change (null when deleted)"`
	At     time.Time `json:"at" required:"true"`
}

// HistoryList is the answer of GET .../memory/history.
type HistoryList struct {
	Changes []Change `json:"changes" required:"true" doc:"newest first"`
}

func checkLabel(label string) error {
	if !labelRule.MatchString(label) {
		return fault.Invalid("label", "must be 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit, got %q", label)
	}
	return nil
}

// Blocks lists a workspace's blocks by label.
func (s *Service) Blocks(ctx context.Context, ref WorkspaceRef) (BlockList, error) {
	bs, err := s.blocks(ctx, ref.Workspace)
	return BlockList{Blocks: bs}, err
}

func (s *Service) blocks(ctx context.Context, ws string) ([]Block, error) {
	var out []Block
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		out, err = listOf[Block](tx, blockTable, ws, false)
		return err
	})
	return out, fault.Wrap("list memory blocks", err)
}

// Block reads one block.
func (s *Service) Block(ctx context.Context, ref BlockRef) (Block, error) {
	ws, label := ref.Workspace, ref.Label
	var b Block
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		ok, err := tx.Get(bucketBlocks, prefix(ws)+label, &b)
		if err == nil && !ok {
			return fault.NotFound("memory block", label)
		}
		return err
	})
	return b, fault.Wrap("read a memory block", err)
}

// PutBlock creates or replaces a block; created tells which.
func (s *Service) PutBlock(ctx context.Context, req BlockPut) (BlockAnswer, error) {
	b, created, err := s.putBlock(ctx, req.Workspace, req.Label, req.Body)
	return BlockAnswer{Status: createdStatus(created), Body: b}, err
}

func (s *Service) putBlock(ctx context.Context, ws, label string, in PutBlock) (b Block, created bool, err error) {
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		cfg, err := s.loadConfig(tx, ws)
		if err != nil {
			return err
		}
		var old Block
		exists, err := tx.Get(bucketBlocks, prefix(ws)+label, &old)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		b = Block{Label: label, Value: in.Value, Description: in.Description, Limit: cfg.Memory.DefaultBlockLimit,
			Version: 1, CreatedAt: now, UpdatedAt: now}
		if in.Limit != nil {
			b.Limit = *in.Limit
		}
		if !exists && tx.CountPrefix(bucketBlocks, prefix(ws)) >= cfg.Memory.MaxBlocks {
			return fault.Invalid("label", "the workspace already holds max_blocks (%d) memory blocks", cfg.Memory.MaxBlocks)
		}
		if exists {
			b.Version, b.CreatedAt = old.Version+1, old.CreatedAt
		}
		if err := checkBlock(b, cfg); err != nil {
			return err
		}
		created = !exists
		var before *Block
		if exists {
			before = &old
		}
		return s.writeBlock(tx, ws, before, &b)
	})
	return b, created, fault.Wrap("write a memory block", err)
}

// PatchBlock changes the given fields of a block.
func (s *Service) PatchBlock(ctx context.Context, req BlockPatch) (b Block, err error) {
	ws, label, in := req.Workspace, req.Label, req.Body
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		cfg, err := s.loadConfig(tx, ws)
		if err != nil {
			return err
		}
		var old Block
		ok, err := tx.Get(bucketBlocks, prefix(ws)+label, &old)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("memory block", label)
		}
		if in.Version != nil && *in.Version != old.Version {
			return &fault.Error{Code: fault.CodeConflict, Details: "version",
				Message: "version: the block is at version " + strconv.FormatInt(old.Version, 10) + ", not " + strconv.FormatInt(*in.Version, 10)}
		}
		b = old
		if in.Value != nil {
			b.Value = *in.Value
		}
		if in.Append != nil {
			if b.Value != "" {
				b.Value += "\n"
			}
			b.Value += *in.Append
		}
		if in.Description != nil {
			b.Description = *in.Description
		}
		if in.Limit != nil {
			b.Limit = *in.Limit
		}
		if err := checkBlock(b, cfg); err != nil {
			if in.Append != nil && in.Value == nil {
				return fault.Invalid("append", "the value would be %d characters, over the block's limit of %d", utf8.RuneCountInString(b.Value), b.Limit)
			}
			return err
		}
		b.Version++
		b.UpdatedAt = s.clock.Now()
		return s.writeBlock(tx, ws, &old, &b)
	})
	return b, fault.Wrap("change a memory block", err)
}

// DeleteBlock removes a block (kept in the history).
func (s *Service) DeleteBlock(ctx context.Context, ref BlockRef) error {
	ws, label := ref.Workspace, ref.Label
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		var old Block
		ok, err := tx.Get(bucketBlocks, prefix(ws)+label, &old)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("memory block", label)
		}
		return s.writeBlock(tx, ws, &old, nil)
	})
	return fault.Wrap("delete a memory block", err)
}

func checkBlock(b Block, cfg Config) error {
	if b.Limit > cfg.Memory.MaxBlockLimit {
		return fault.Invalid("limit", "must be at most max_block_limit (%d), got %d", cfg.Memory.MaxBlockLimit, b.Limit)
	}
	if n := utf8.RuneCountInString(b.Value); n > b.Limit {
		return fault.Invalid("value", "is %d characters, over the block's limit of %d", n, b.Limit)
	}
	return nil
}

// writeBlock stores after (nil deletes) and records the change.
func (s *Service) writeBlock(tx *store.Tx, ws string, before, after *Block) error {
	label := ""
	action := "updated"
	switch {
	case after == nil:
		label, action = before.Label, "deleted"
		if err := tx.Delete(bucketBlocks, prefix(ws)+label); err != nil {
			return err
		}
	default:
		label = after.Label
		if before == nil {
			action = "created"
		}
		if err := tx.Put(bucketBlocks, prefix(ws)+label, after); err != nil {
			return err
		}
	}
	seq, err := tx.NextSeq(bucketHistory)
	if err != nil {
		return err
	}
	ch := Change{ID: "h_" + strconv.FormatUint(seq, 10), Label: label, Action: action, Before: before, After: after, At: s.clock.Now()}
	return tx.Put(bucketHistory, prefix(ws)+store.SeqKey(seq), ch)
}

// HistoryFilter selects history entries.
type HistoryFilter struct {
	Label string `query:"label" doc:"only changes of this block"`
	Limit int    `query:"limit" minimum:"1" maximum:"1000" default:"50" doc:"at most this many"`
}

// History lists changes, newest first.
func (s *Service) History(ctx context.Context, q HistoryQuery) (HistoryList, error) {
	h, err := s.history(ctx, q.Workspace, q.HistoryFilter)
	return HistoryList{Changes: h}, err
}

func (s *Service) history(ctx context.Context, ws string, f HistoryFilter) ([]Change, error) {
	fs := store.KeyPrefix(prefix(ws))
	if f.Label != "" {
		fs = append(fs, store.Where("label", store.Eq, f.Label))
	}
	out := []Change{}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		if f.Limit <= 0 {
			var err error
			out, err = listOf[Change](tx, historyTable, ws, true, fs...)
			return err
		}
		pg, err := store.PageOf[Change](tx, historyTable, store.Query{Filters: fs, Desc: true, Limit: f.Limit, SkipTotal: true})
		out = append(out, pg.Items...)
		return err
	})
	return out, fault.Wrap("list the memory history", err)
}

// HistoryEntry reads one change by id (h_N).
func (s *Service) HistoryEntry(ctx context.Context, ref ChangeRef) (Change, error) {
	ws, id := ref.Workspace, ref.ID
	var ch Change
	n, err := strconv.ParseUint(strings.TrimPrefix(id, "h_"), 10, 64)
	if !strings.HasPrefix(id, "h_") || err != nil || n == 0 {
		return ch, fault.NotFound("history entry", id)
	}
	err = s.db.ViewContext(ctx, func(tx *store.Tx) error {
		ok, err := tx.Get(bucketHistory, prefix(ws)+store.SeqKey(n), &ch)
		if err == nil && !ok {
			return fault.NotFound("history entry", id)
		}
		return err
	})
	return ch, fault.Wrap("read a history entry", err)
}
