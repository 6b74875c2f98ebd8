package workspace

import (
	"context"
	"strconv"
	"time"
	"unicode/utf8"

	"deckhand/platform/fault"
	"deckhand/platform/lazyre"
	"deckhand/platform/store"
)

const bucketSkills = "skills" // ws/name → Skill

var skillNameRule = lazyre.New(`^[a-z0-9][a-z0-9-]{0,63}$`)

const maxSkillContent = 256 << 10

// Skill is a named document of instructions an agent loads when the
// description says it applies (as Agent Skills' SKILL.md).
type Skill struct {
	Name        string    `json:"name" required:"true"`
	Description string    `json:"description" required:"true"`
	Content     string    `json:"content" required:"true" doc:"the instructions, Markdown"`
	Version     int64     `json:"version" required:"true"`
	CreatedAt   time.Time `json:"created_at" required:"true"`
	UpdatedAt   time.Time `json:"updated_at" required:"true"`
}

// SkillList is the answer of GET .../skills.
type SkillList struct {
	Skills []Skill `json:"skills" required:"true"`
}

// PutSkill is the body of PUT .../skills/{name}.
type PutSkill struct {
	Description string `json:"description" required:"true" doc:"when to use the skill, 1-1024 characters"`
	Content     string `json:"content" required:"true" doc:"up to 256 KiB"`
}

// Validate checks the skill.
func (r *PutSkill) Validate() error { return checkSkill(&r.Description, &r.Content) }

// PatchSkill is the body of PATCH .../skills/{name}.
type PatchSkill struct {
	Description *string `json:"description"`
	Content     *string `json:"content"`
	Version     *int64  `json:"version" doc:"when given, applies only to this version (409 CONFLICT otherwise)"`
}

// Validate checks the patch.
func (r *PatchSkill) Validate() error {
	if r.Description == nil && r.Content == nil {
		return fault.Invalid("body", "give description or content")
	}
	return checkSkill(r.Description, r.Content)
}

func checkSkill(desc, content *string) error {
	if desc != nil {
		if n := utf8.RuneCountInString(*desc); n < 1 || n > 1024 {
			return fault.Invalid("description", "must be 1-1024 characters, got %d", n)
		}
	}
	if content != nil && len(*content) > maxSkillContent {
		return fault.Invalid("content", "must be at most 256 KiB")
	}
	return nil
}

func checkSkillName(name string) error {
	if !skillNameRule.MatchString(name) {
		return fault.Invalid("name", "must be 1-64 of a-z 0-9 - starting with a letter or digit, got %q", name)
	}
	return nil
}

// Skills lists a workspace's skills by name.
func (s *Service) Skills(ctx context.Context, ref WorkspaceRef) (SkillList, error) {
	l, err := s.skills(ctx, ref.Workspace)
	return SkillList{Skills: l}, err
}

func (s *Service) skills(ctx context.Context, ws string) ([]Skill, error) {
	out := []Skill{}
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		var err error
		out, err = listOf[Skill](tx, skillTable, ws, false)
		return err
	})
	return out, fault.Wrap("list skills", err)
}

// Skill reads one skill.
func (s *Service) Skill(ctx context.Context, ref SkillRef) (Skill, error) {
	ws, name := ref.Workspace, ref.Name
	var k Skill
	err := s.db.ViewContext(ctx, func(tx *store.Tx) error {
		ok, err := tx.Get(bucketSkills, prefix(ws)+name, &k)
		if err == nil && !ok {
			return fault.NotFound("skill", name)
		}
		return err
	})
	return k, fault.Wrap("read a skill", err)
}

// PutSkill creates or replaces a skill.
func (s *Service) PutSkill(ctx context.Context, req SkillPut) (SkillAnswer, error) {
	k, created, err := s.putSkill(ctx, req.Workspace, req.Name, req.Body)
	return SkillAnswer{Status: createdStatus(created), Body: k}, err
}

func (s *Service) putSkill(ctx context.Context, ws, name string, in PutSkill) (k Skill, created bool, err error) {
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		var old Skill
		exists, err := tx.Get(bucketSkills, prefix(ws)+name, &old)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		k = Skill{Name: name, Description: in.Description, Content: in.Content, Version: 1, CreatedAt: now, UpdatedAt: now}
		if exists {
			k.Version, k.CreatedAt = old.Version+1, old.CreatedAt
		}
		created = !exists
		return tx.Put(bucketSkills, prefix(ws)+name, k)
	})
	return k, created, fault.Wrap("write a skill", err)
}

// PatchSkill changes the given fields.
func (s *Service) PatchSkill(ctx context.Context, req SkillPatch) (k Skill, err error) {
	ws, name, in := req.Workspace, req.Name, req.Body
	err = s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		ok, err := tx.Get(bucketSkills, prefix(ws)+name, &k)
		if err != nil {
			return err
		}
		if !ok {
			return fault.NotFound("skill", name)
		}
		if in.Version != nil && *in.Version != k.Version {
			return &fault.Error{Code: fault.CodeConflict, Details: "version",
				Message: "version: the skill is at version " + strconv.FormatInt(k.Version, 10) + ", not " + strconv.FormatInt(*in.Version, 10)}
		}
		if in.Description != nil {
			k.Description = *in.Description
		}
		if in.Content != nil {
			k.Content = *in.Content
		}
		k.Version++
		k.UpdatedAt = s.clock.Now()
		return tx.Put(bucketSkills, prefix(ws)+name, k)
	})
	return k, fault.Wrap("change a skill", err)
}

// DeleteSkill removes a skill.
func (s *Service) DeleteSkill(ctx context.Context, ref SkillRef) error {
	ws, name := ref.Workspace, ref.Name
	err := s.db.UpdateContext(ctx, func(tx *store.Tx) error {
		if tx.GetRaw(bucketSkills, prefix(ws)+name) == nil {
			return fault.NotFound("skill", name)
		}
		return tx.Delete(bucketSkills, prefix(ws)+name)
	})
	return fault.Wrap("delete a skill", err)
}
