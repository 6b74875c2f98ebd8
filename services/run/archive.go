package run

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

func removeAll(p string) error {
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

// syncArchive downloads the archive, extracts it beside the destination
// and swaps it in, so a failure leaves the previous content.
func (s *Service) syncArchive(ctx context.Context, st *stepper, src Source, dest string) (string, error) {
	parent, base := filepath.Dir(dest), filepath.Base(dest)
	tmp, err := os.CreateTemp(parent, "."+base+".download-*")
	if err != nil {
		return "", err
	}
	defer func() { _ = tmp.Close(); _ = os.Remove(tmp.Name()) }()
	var sum string
	if err := st.do("download", func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
		if err != nil {
			return err
		}
		if u, err := url.Parse(src.URL); err == nil {
			if err := s.egress.checkHost(u.Hostname()); err != nil {
				return plain(err)
			}
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return fmt.Errorf("download: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("download: %s answered %s", redact(src.URL), resp.Status)
		}
		h := sha256.New()
		n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, s.maxBytes+1))
		if err != nil {
			return fmt.Errorf("download: %w", err)
		}
		if n > s.maxBytes {
			return fmt.Errorf("download: larger than %d bytes (--run-max-archive)", s.maxBytes)
		}
		sum = hex.EncodeToString(h.Sum(nil))
		return nil
	}); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(parent, "."+base+".extract-*")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(work) }()
	if err := st.do("extract", func() error { return s.extract(tmp, work) }); err != nil {
		return "", err
	}
	err = st.do("install", func() error {
		old := ""
		if _, err := os.Lstat(dest); err == nil {
			old = work + ".old"
			if err := os.Rename(dest, old); err != nil {
				return err
			}
		}
		if err := os.Rename(work, dest); err != nil {
			if old != "" {
				_ = os.Rename(old, dest)
			}
			return err
		}
		if old != "" {
			return removeAll(old)
		}
		return nil
	})
	return "sha256:" + sum, err
}

func redact(raw string) string {
	raw, _, _ = strings.Cut(raw, "?")
	if i := strings.Index(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			raw = raw[:j+3] + raw[i+1:]
		}
	}
	return raw
}

// extract writes the archive in f (zip, gzip'd tar or tar) into dir
// through an os.Root: no entry can land outside dir.
func (s *Service) extract(f *os.File, dir string) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	magic := make([]byte, 4)
	n, _ := io.ReadFull(f, magic)
	magic = magic[:n]
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	x := &extractor{root: root, budget: s.maxBytes}
	switch {
	case len(magic) == 4 && string(magic) == "PK\x03\x04":
		st, err := f.Stat()
		if err != nil {
			return err
		}
		zr, err := zip.NewReader(f, st.Size())
		if err != nil {
			return fmt.Errorf("zip: %w", err)
		}
		for _, zf := range zr.File {
			if err := x.zipEntry(zf); err != nil {
				return err
			}
		}
		return nil
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		gz, err := gzip.NewReader(bufio.NewReader(f))
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		defer gz.Close()
		return x.tar(tar.NewReader(gz))
	default:
		return x.tar(tar.NewReader(bufio.NewReader(f)))
	}
}

type extractor struct {
	root   *os.Root
	budget int64
}

// clean checks an entry name and answers it relative, or "" for the top.
func clean(name string) (string, error) {
	name = strings.ReplaceAll(name, "\\", "/")
	if strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("archive entry %q: absolute names are refused", name)
	}
	for _, p := range strings.Split(name, "/") {
		if p == ".." {
			return "", fmt.Errorf("archive entry %q: names with .. are refused", name)
		}
	}
	c := path.Clean(name)
	if c == "." {
		return "", nil
	}
	return c, nil
}

func (x *extractor) mkdirs(rel string) error {
	if rel == "" {
		return nil
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		if err := x.root.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("archive entry %q: %w", rel, err)
		}
	}
	return nil
}

func (x *extractor) file(rel string, mode os.FileMode, r io.Reader) error {
	if err := x.mkdirs(path.Dir(rel)); err != nil && path.Dir(rel) != "." {
		return err
	}
	perm := os.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := x.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("archive entry %q: %w", rel, err)
	}
	n, err := io.Copy(f, io.LimitReader(r, x.budget+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive entry %q: %w", rel, err)
	}
	x.budget -= n
	if x.budget < 0 {
		return errors.New("archive: extracts to more than --run-max-archive bytes")
	}
	return nil
}

func (x *extractor) tar(tr *tar.Reader) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tar: %w", err)
		}
		rel, err := clean(h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := x.mkdirs(rel); err != nil {
				return err
			}
		case tar.TypeReg:
			if rel == "" {
				continue
			}
			if err := x.file(rel, h.FileInfo().Mode(), tr); err != nil {
				return err
			}
		default:
			// Links, devices and FIFOs are skipped: a link could point out
			// of the source's directory.
		}
	}
}

func (x *extractor) zipEntry(zf *zip.File) error {
	rel, err := clean(zf.Name)
	if err != nil {
		return err
	}
	mode := zf.Mode()
	switch {
	case mode.IsDir():
		return x.mkdirs(rel)
	case mode.IsRegular():
		if rel == "" {
			return nil
		}
		r, err := zf.Open()
		if err != nil {
			return fmt.Errorf("zip entry %q: %w", zf.Name, err)
		}
		defer r.Close()
		return x.file(rel, mode, r)
	}
	return nil
}
