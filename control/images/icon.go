package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	"deckhand/control/domain"
	"deckhand/platform"
	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// Uploaded icons are bounded so a record cannot carry an arbitrary blob.
const (
	maxIconBytes = 256 << 10
	maxIconSide  = 1024
)

// decodeIcon checks icon_png_b64: base64 of a PNG that decodes fully
// within the bounds.
func decodeIcon(b64 string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fault.Invalid("icon_png_b64", "must be standard base64")
	}
	if len(raw) > maxIconBytes {
		return nil, fault.Invalid("icon_png_b64", "must be at most %d bytes once decoded", maxIconBytes)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return nil, fault.Invalid("icon_png_b64", "must be a PNG image")
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > maxIconSide || cfg.Height > maxIconSide {
		return nil, fault.Invalid("icon_png_b64", "must be at most %dx%d pixels", maxIconSide, maxIconSide)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		return nil, fault.Invalid("icon_png_b64", "must be a PNG image")
	}
	return raw, nil
}

// DefaultIcon draws an image's generated icon: a 5x5 mirrored pattern in
// a colour taken from the id's hash, 8 pixels per cell with a 12 pixel
// margin (64x64). The same id always gives the same bytes.
func DefaultIcon(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	fg := color.NRGBA{R: 64 + sum[0]%160, G: 64 + sum[1]%160, B: 64 + sum[2]%160, A: 255}
	bg := color.NRGBA{R: 240, G: 240, B: 240, A: 255}
	const side, cell, margin = 64, 8, 12
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	draw.Draw(img, img.Bounds(), image.NewUniform(bg), image.Point{}, draw.Src)
	for row := range 5 {
		for col := range 3 {
			if sum[3+row*3+col]&1 == 0 {
				continue
			}
			for _, c := range []int{col, 4 - col} {
				cellAt := image.Rect(0, 0, cell, cell).Add(image.Pt(margin+c*cell, margin+row*cell))
				draw.Draw(img, cellAt, image.NewUniform(fg), image.Point{}, draw.Src)
			}
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

// Icon is an image's PNG: the uploaded one or the generated default.
func (s *Service) Icon(ctx context.Context, id string) ([]byte, error) {
	if _, err := platform.Caller(ctx); err != nil {
		return nil, err
	}
	out, err := domain.Transact(ctx, s.env.Store.ViewContext, "read the icon", func(tx *store.Tx) ([]byte, error) {
		r, err := load(tx, id)
		if err != nil || !r.HasIcon {
			return nil, err
		}
		return bytes.Clone(tx.GetRaw(bucketIcons, id)), nil
	})
	if out == nil && err == nil {
		out = DefaultIcon(id)
	}
	return out, err
}

// IconFile is the icon as served: a PNG browsers may keep an hour.
type IconFile struct {
	CacheControl string `header:"Cache-Control"`
	Body         []byte
}

// IconPNG is Icon for the route: the PNG with its caching header.
func (s *Service) IconPNG(ctx context.Context, ref ImageRef) (*IconFile, error) {
	png, err := s.Icon(ctx, ref.ID)
	if err != nil {
		return nil, err
	}
	return &IconFile{CacheControl: "private, max-age=3600", Body: png}, nil
}
