package files

import (
	"context"
	"io/fs"
	"net/http"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// Listing is a directory's entries.
type Listing struct {
	Path      string  `json:"path" required:"true"`
	Entries   []Entry `json:"entries" required:"true" doc:"sorted by path; with depth > 1 a directory's entries follow it"`
	Truncated bool    `json:"truncated" required:"true" doc:"more entries than limit"`
}

// ListInput selects what List returns.
type ListInput struct {
	Path   string
	Depth  int
	Hidden bool
	Limit  int
}

// List reads a directory, descending depth levels (1 = its entries only);
// symbolic links to directories are listed, never followed.
func (s *Service) List(ctx context.Context, in ListInput) (Listing, error) {
	r, err := rel("path", in.Path)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Path: apiPath(r), Entries: []Entry{}}
	err = s.id.run(func() error {
		fi, err := s.root.Stat(r)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return platform.Errorf(platform.CodeConflict, "%s is not a directory", in.Path).WithDetails("path")
		}
		return s.walk(ctx, r, in, 1, &out)
	})
	if err != nil {
		return Listing{}, fsError(in.Path, err)
	}
	return out, nil
}

func (s *Service) walk(ctx context.Context, dir string, in ListInput, level int, out *Listing) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	infos, err := d.Readdir(-1)
	d.Close()
	if err != nil {
		return err
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name() < infos[j].Name() })
	for _, fi := range infos {
		if !in.Hidden && strings.HasPrefix(fi.Name(), ".") {
			continue
		}
		if len(out.Entries) >= in.Limit {
			out.Truncated = true
			return nil
		}
		r := join(dir, fi.Name())
		out.Entries = append(out.Entries, s.entryOf(r, fi))
		if fi.Mode()&fs.ModeType == fs.ModeDir && level < in.Depth {
			if err := s.walk(ctx, r, in, level+1, out); err != nil && !isSkippable(err) {
				return err
			}
			if out.Truncated {
				return nil
			}
		}
	}
	return nil
}

// isSkippable: a subdirectory that vanished or may not be read is left out
// of a deep listing rather than failing it.
func isSkippable(err error) bool {
	return err != nil && (errorsIsNotExist(err) || errorsIsPermission(err))
}

func (s *Service) handleList(c fiber.Ctx) error {
	q := platform.QueryOf(c)
	out, err := s.List(c.Context(), ListInput{Path: q.String("path"), Depth: int(q.Int("depth")),
		Hidden: q.Bool("hidden"), Limit: int(q.Int("limit"))})
	if err != nil {
		return err
	}
	// The encoder's bytes go out as they are: encoding/json would check
	// and compact 30 MB of output from a MarshalJSON again.
	raw, _ := out.MarshalJSON()
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	return c.Status(http.StatusOK).Send(raw)
}

// Stat describes one path without following a final symbolic link.
func (s *Service) Stat(p string) (Entry, error) {
	r, err := rel("path", p)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	err = s.id.run(func() error {
		fi, err := s.root.Lstat(r)
		if err == nil {
			e = s.entryOf(r, fi)
		}
		return err
	})
	return e, fsError(p, err)
}

func (s *Service) handleStat(c fiber.Ctx) error {
	e, err := s.Stat(platform.QueryOf(c).String("path"))
	if err != nil {
		return err
	}
	return platform.JSON(c, http.StatusOK, e)
}
