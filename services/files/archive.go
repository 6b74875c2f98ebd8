package files

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"deckhand/platform"
	"deckhand/platform/fault"
)

// ArchiveInput names the directory to download and the format.
type ArchiveInput struct {
	PathQuery
	Format string `query:"format" enum:"zip,tar.gz" default:"tar.gz" doc:"archive format"`
}

// Archive is a directory's archive, written while the tree is walked.
type Archive struct {
	Type        string `header:"Content-Type" doc:"application/gzip or application/zip"`
	Disposition string `header:"Content-Disposition" doc:"attachment with the directory's name"`
	Body        platform.BodyWriter
}

// Archive streams a directory as zip or tar.gz while walking it.
func (s *Service) Archive(_ context.Context, in ArchiveInput) (Archive, error) {
	p := in.Path
	r, err := rel("path", p)
	if err != nil {
		return Archive{}, err
	}
	dir, err := s.isDir(r)
	if err != nil {
		return Archive{}, fsError(p, err)
	}
	if !dir {
		return Archive{}, fault.Errorf(fault.CodeConflict, "%s is not a directory (files download through /api/v1/files/content)", p).WithDetails("path")
	}
	base := path.Base(apiPath(r))
	if base == "/" {
		base = "root"
	}
	ct, name := "application/gzip", base+".tar.gz"
	if in.Format == "zip" {
		ct, name = "application/zip", base+".zip"
	}
	return Archive{Type: ct, Disposition: mime.FormatMediaType("attachment", map[string]string{"filename": name}),
		Body: func(w platform.StreamWriter) {
			_ = s.id.run(func() error {
				if in.Format == "zip" {
					return s.writeZip(w, r)
				}
				return s.writeTarGz(w, r)
			})
			_ = w.Flush()
		}}, nil
}

// walkTree visits r's tree (links not followed), names relative to r.
func (s *Service) walkTree(r string, fn func(name, full string, fi fs.FileInfo) error) error {
	return s.each(r, true, func(full string, fi fs.FileInfo) error {
		if full == r {
			return nil
		}
		name := strings.TrimPrefix(full, r+"/")
		if r == "." {
			name = full
		}
		return fn(name, full, fi)
	})
}

func (s *Service) writeTarGz(w io.Writer, r string) error {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	err := s.walkTree(r, func(name, full string, fi fs.FileInfo) error {
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			link, _ = s.root.Readlink(full)
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return nil // sockets and the like
		}
		h.Name = name
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		if !fi.Mode().IsRegular() {
			return tw.WriteHeader(h)
		}
		f, _, err := s.openRegular(full)
		if err != nil {
			return nil // unreadable: skipped
		}
		defer f.Close()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = io.CopyN(tw, f, h.Size)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	return err
}

func (s *Service) writeZip(w io.Writer, r string) error {
	zw := zip.NewWriter(w)
	err := s.walkTree(r, func(name, full string, fi fs.FileInfo) error {
		h, err := zip.FileInfoHeader(fi)
		if err != nil {
			return nil
		}
		h.Name = name
		switch {
		case fi.IsDir():
			h.Name += "/"
			_, err = zw.CreateHeader(h)
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := s.root.Readlink(full)
			h.Method = zip.Store
			zf, err := zw.CreateHeader(h)
			if err == nil {
				_, err = io.WriteString(zf, target)
			}
			return err
		case !fi.Mode().IsRegular():
			return nil
		}
		f, _, err := s.openRegular(full)
		if err != nil {
			return nil
		}
		defer f.Close()
		h.Method = zip.Deflate
		zf, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		_, err = io.Copy(zf, f)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	return err
}

// TarResult is what a tar upload wrote.
type TarResult struct {
	Path  string `json:"path" required:"true"`
	Files int    `json:"files" required:"true" doc:"regular files written"`
	Dirs  int    `json:"dirs" required:"true"`
	Links int    `json:"links" required:"true" doc:"symbolic links created"`
	Bytes int64  `json:"bytes" required:"true"`
}

// TarInput is a directory uploaded as one tar stream.
type TarInput struct {
	PathQuery
	Gzip            bool   `query:"gzip" default:"false" doc:"the body is gzip-compressed"`
	ContentEncoding string `header:"Content-Encoding" doc:"gzip: the body is gzip-compressed"`
	ContentLength   int64  `header:"Content-Length" minimum:"0" doc:"a body declared over --files-max-upload is refused before it is read"`
	Body            io.Reader
}

// UnpackTar unpacks a tar stream into a directory as it arrives.
func (s *Service) UnpackTar(_ context.Context, tin TarInput) (TarResult, error) {
	if err := s.checkLength(tin.ContentLength); err != nil {
		return TarResult{}, err
	}
	p := tin.Path
	dir, err := rel("path", p)
	if err != nil {
		return TarResult{}, err
	}
	in := s.limit(tin.Body)
	if tin.Gzip || strings.EqualFold(tin.ContentEncoding, "gzip") {
		gz, err := gzip.NewReader(in)
		if err != nil {
			return TarResult{}, fault.Invalid("body", "is not gzip: %v", err)
		}
		in = gz
	}
	out, err := s.unpack(in, dir, p)
	if err != nil {
		return TarResult{}, err
	}
	return *out, nil
}

func (s *Service) unpack(in io.Reader, dir, p string) (*TarResult, error) {
	out := &TarResult{Path: apiPath(dir)}
	if err := s.id.run(func() error { return s.root.MkdirAll(dir, 0o755) }); err != nil {
		return nil, fsError(p, err)
	}
	tr := tar.NewReader(in)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if errors.As(err, new(*http.MaxBytesError)) {
			return nil, s.tooLarge()
		}
		if err != nil {
			return nil, fault.Invalid("body", "is not a well-formed tar stream: %v", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if path.IsAbs(h.Name) {
			return nil, outsideRoot(h.Name)
		}
		target, err := rel("path", path.Join(apiPath(dir), name))
		if err != nil {
			return nil, err
		}
		if rr, _ := rel("path", "/"+name); strings.HasPrefix(rr, "..") || strings.Contains("/"+name+"/", "/../") {
			return nil, outsideRoot(h.Name)
		}
		if target == dir {
			continue
		}
		mode := fs.FileMode(h.Mode) & fs.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := s.id.run(func() error { return s.root.MkdirAll(target, mode|0o700) }); err != nil {
				return nil, fsError(apiPath(target), err)
			}
			out.Dirs++
		case tar.TypeReg:
			e, _, err := s.Write(WriteInput{Path: apiPath(target), Body: tr, Overwrite: true, Mode: octal(mode)})
			if err != nil {
				return nil, err
			}
			out.Files++
			out.Bytes += e.Size
		case tar.TypeSymlink:
			err := s.id.run(func() error {
				if err := s.mkParents(target); err != nil {
					return err
				}
				_ = s.root.Remove(target)
				return s.root.Symlink(h.Linkname, target)
			})
			if err != nil {
				return nil, fsError(apiPath(target), err)
			}
			out.Links++
		}
	}
	return out, nil
}
