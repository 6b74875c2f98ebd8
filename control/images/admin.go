package images

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"deckhand/control/catalog"
	"deckhand/control/domain"
	"deckhand/control/money"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// CreateInput is the admin create body: the public image fields except
// the computed ones (id, added_date, ratings, icon_url), plus tags (what
// search matches besides the text fields) and an optional icon.
type CreateInput struct {
	Alias        string      `json:"alias" required:"true" doc:"1-254 printable characters, unique (case-insensitive)"`
	Description  string      `json:"description" doc:"at most 4000 characters"`
	ImageName    string      `json:"image_name" required:"true" doc:"1-254 printable characters"`
	Architecture string      `json:"architecture" required:"true" doc:"lower-case letters, digits and _ (amd64, arm64, armhf ...), at most 32"`
	OS           string      `json:"os" required:"true" doc:"1-64 printable characters"`
	Release      string      `json:"release" doc:"at most 64 printable characters"`
	Variant      string      `json:"variant" doc:"at most 64 printable characters"`
	Size         int64       `json:"size" doc:"bytes, at least 0"`
	Price        json.Number `json:"price" doc:"number at least 0 with at most 2 decimals; 0 or absent is free"`
	Prespawn     bool        `json:"prespawn"`
	Serial       string      `json:"serial" doc:"at most 64 printable characters; default: the added date as YYYYMMDD_hhmm"`
	Tags         []string    `json:"tags" doc:"at most 32 tags of 1-64 printable characters"`
	IconPNGB64   string      `json:"icon_png_b64" doc:"base64 PNG, at most 256 KiB and 1024x1024; absent: a generated icon"`

	price money.Amount
	icon  []byte
}

// text checks a printable single-line string of at most max characters.
func text(field, v string, min, max int) error {
	n := utf8.RuneCountInString(v)
	if n < min || n > max {
		if min > 0 {
			return fault.Invalid(field, "must be %d to %d characters", min, max)
		}
		return fault.Invalid(field, "must be at most %d characters", max)
	}
	if !utf8.ValidString(v) || strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
		return fault.Invalid(field, "must be printable text without control characters")
	}
	return nil
}

// Validate checks every field and decodes price and icon.
func (in *CreateInput) Validate() error {
	for _, c := range []struct {
		field, v string
		min, max int
	}{{"alias", in.Alias, 1, 254}, {"image_name", in.ImageName, 1, 254}, {"os", in.OS, 1, 64},
		{"release", in.Release, 0, 64}, {"variant", in.Variant, 0, 64}, {"serial", in.Serial, 0, 64}} {
		if err := text(c.field, c.v, c.min, c.max); err != nil {
			return err
		}
	}
	switch {
	case strings.TrimSpace(in.Alias) != in.Alias:
		return fault.Invalid("alias", "must not start or end with spaces")
	case utf8.RuneCountInString(in.Description) > 4000 || strings.ContainsAny(in.Description, "\x00\x1e\x1f"):
		return fault.Invalid("description", "must be at most 4000 characters without NUL or separator characters")
	case in.Architecture == "" || len(in.Architecture) > 32 || strings.ContainsFunc(in.Architecture, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}):
		return fault.Invalid("architecture", "must be 1 to 32 lower-case letters, digits or _ (amd64, arm64, armhf ...)")
	case in.Size < 0:
		return fault.Invalid("size", "must be an integer at least 0")
	}
	if in.Price != "" {
		p, err := money.ParseNumber(in.Price)
		if err != nil {
			return fault.Invalid("price", "must be a number at least 0 with at most 2 decimals")
		}
		in.price = p
	}
	if len(in.Tags) > 32 {
		return fault.Invalid("tags", "must be at most 32 tags")
	}
	for _, t := range in.Tags {
		if err := text("tags", t, 1, 64); err != nil {
			return err
		}
	}
	if in.IconPNGB64 != "" {
		icon, err := decodeIcon(in.IconPNGB64)
		if err != nil {
			return err
		}
		in.icon = icon
	}
	return nil
}

// Create publishes an image (admin only).
func (s *Service) Create(ctx context.Context, in CreateInput) (*Image, error) {
	p, err := platform.AdminCaller(ctx)
	if err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return domain.Transact(ctx, s.env.Store.UpdateContext, "create the image", func(tx *store.Tx) (*Image, error) {
		r, err := s.insert(tx, &in)
		if err != nil {
			return nil, err
		}
		img := &Image{Fields: r.fields(), AddedDate: r.AddedDate, Serial: r.Serial}
		return img, s.event(tx, ctx, p, "image.created", r.ID, map[string]any{"alias": r.Alias, "price": r.Price})
	})
}

// insert writes a validated new image, its alias and icon.
func (s *Service) insert(tx *store.Tx, in *CreateInput) (*imageRec, error) {
	alias := strings.ToLower(in.Alias)
	var taken string
	if ok, err := tx.Get(bucketAliases, alias, &taken); err != nil {
		return nil, err
	} else if ok {
		return nil, fault.Errorf(fault.CodeConflict, "alias: %q is already used by image %s", in.Alias, taken)
	}
	now := s.env.Clock.Now().UTC()
	r := &imageRec{ID: catalog.NewID(idPrefix), Alias: in.Alias, Description: in.Description, ImageName: in.ImageName,
		Architecture: in.Architecture, OS: in.OS, Release: in.Release, Variant: in.Variant, Size: in.Size,
		Price: in.price, Prespawn: in.Prespawn, Tags: in.Tags, Serial: cmp.Or(in.Serial, now.Format("20060102_1504")),
		AddedNanos: now.UnixNano(), AddedDate: now.Format("2006-01-02T15:04:05.000Z"), HasIcon: in.icon != nil}
	if err := tx.Put(bucketAliases, alias, r.ID); err != nil {
		return nil, err
	}
	if in.icon != nil {
		if err := tx.PutRaw(bucketIcons, r.ID, in.icon); err != nil {
			return nil, err
		}
	}
	return r, tx.Put(bucketImages, r.ID, r)
}
