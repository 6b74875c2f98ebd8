package files

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"hash"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/webdav"

	"deckhand/platform/fault"
	"deckhand/platform/store"
)

// WebDAV is golang.org/x/net/webdav over the same os.Root, plus what it
// lacks:
//   - dead properties (PROPPATCH), kept in the service's store keyed by
//     path, moved and deleted with their resource;
//   - conditional PUT: If-Match / If-None-Match, and the entity tags of an
//     If header, are checked against the resource's ETag (x/net checks
//     only the lock tokens of an If header);
//   - atomic PUT: the body goes to a temporary file renamed on close, so a
//     failed upload leaves the old content;
//   - the REST API's errors: a refusal by the OS is 403, a full disk 507,
//     an upload over --files-max-upload 413, a path leading out 403.
type davServer struct {
	s     *Service
	h     *webdav.Handler
	locks *davLocks
}

const propBucket = "dav-props"

func newDAV(s *Service) *davServer {
	d := &davServer{s: s, locks: newDAVLocks(s.deps.Clock)}
	d.h = &webdav.Handler{Prefix: "/dav", FileSystem: &davFS{s: s}, LockSystem: d.locks, Logger: func(r *http.Request, err error) {
		if st := stateOf(r.Context()); st != nil && err != nil {
			st.mu.Lock()
			st.xerr = err
			st.mu.Unlock()
		}
	}}
	return d
}

// reqState carries what the file system saw back to the handler, which
// then answers with the right status instead of x/net's 405/500.
type reqState struct {
	mu  sync.Mutex
	err error
	// cond is the request's If-Match / If-None-Match, checked again under
	// the path's lock when PUT renames, so of two conditional writers with
	// the same ETag one wins (as in the REST API).
	cond WriteInput
	// noFollow: the request acts on links themselves (COPY, MOVE,
	// DELETE), so a final link is neither followed by Stat nor opened.
	noFollow bool
	// xerr is x/net's error for its answer (its Logger), for logs.
	xerr error
	// checksums: the PROPFIND names oc:checksums, so files' digests are
	// part of the answer.
	checksums bool
	// ocSum is a PUT's OC-Checksum, checked before the rename.
	ocSum *ocChecksum
	// ocMtime is a PUT's X-OC-Mtime: the written file's modification time.
	ocMtime *time.Time
}

type stateKey struct{}

func note(ctx context.Context, err error) error {
	if st := stateOf(ctx); st != nil && err != nil {
		st.mu.Lock()
		if st.err == nil {
			st.err = err
		}
		st.mu.Unlock()
	}
	return err
}

type davFS struct{ s *Service }

func stateOf(ctx context.Context) *reqState {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	return st
}

func noFollow(ctx context.Context) bool {
	st := stateOf(ctx)
	return st != nil && st.noFollow
}

func (d *davFS) rel(ctx context.Context, name string) (string, error) {
	r, err := rel("path", name)
	if err != nil {
		note(ctx, err)
		return "", os.ErrPermission
	}
	return r, nil
}

// osErr keeps errors x/net recognises (not-exist, exist) and notes the rest.
func osErr(ctx context.Context, name string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) && !isEscape(err) {
		return err
	}
	if errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY) {
		return err // x/net answers 405 to MKCOL on an existing collection
	}
	note(ctx, fsError(name, err))
	return os.ErrPermission
}

func (d *davFS) Mkdir(ctx context.Context, name string, perm os.FileMode) error {
	r, err := d.rel(ctx, name)
	if err != nil {
		return err
	}
	return osErr(ctx, name, d.s.id.run(func() error { return d.s.root.Mkdir(r, perm) }))
}

func (d *davFS) OpenFile(ctx context.Context, name string, flag int, perm os.FileMode) (webdav.File, error) {
	r, err := d.rel(ctx, name)
	if err != nil {
		return nil, err
	}
	if flag&os.O_TRUNC != 0 && flag&(os.O_WRONLY|os.O_RDWR) != 0 && r != "." {
		return d.openWriter(ctx, name, r, perm)
	}
	readOnly := flag&(os.O_WRONLY|os.O_RDWR) == 0
	if readOnly {
		// O_NONBLOCK: opening a fifo for reading would otherwise wait for
		// a writer, holding the request (and its thread) for good.
		flag |= syscall.O_NONBLOCK
	}
	var f *os.File
	var node *davNode
	err = d.s.id.run(func() error {
		var before fs.FileInfo
		if readOnly && noFollow(ctx) {
			fi, err := d.s.root.Lstat(r)
			if err != nil {
				return err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				target, err := d.s.root.Readlink(r)
				node = &davNode{fs: d, rel: r, fi: fi, link: target}
				return err
			}
			before = fi
		}
		var err error
		if f, err = d.s.root.OpenFile(r, flag, perm); err != nil {
			return err
		}
		fi, err := f.Stat()
		switch {
		case err != nil:
		case before != nil && !os.SameFile(before, fi):
			// Replaced (by a link, say) between the look and the open.
			err = fault.Errorf(fault.CodeConflict, "%s changed during the request", name).WithDetails("path")
		case readOnly && !fi.Mode().IsRegular() && !fi.IsDir():
			node = &davNode{fs: d, rel: r, fi: fi}
		default:
			return nil
		}
		f.Close()
		f = nil
		return err
	})
	if err != nil {
		return nil, osErr(ctx, name, err)
	}
	if node != nil {
		return node, nil
	}
	return &davFile{File: f, fs: d, rel: r, ctx: ctx, name: name}, nil
}

// davNode is a resource that is not opened: a symbolic link when the
// request acts on links themselves, or a fifo, socket or device. It has
// its own FileInfo and no content; COPY makes a link of a link and skips
// the others (davFile.ReadFrom), as the REST copy does.
type davNode struct {
	fs   *davFS
	rel  string
	fi   fs.FileInfo
	link string // a link's target as stored
}

func (n *davNode) Close() error                       { return nil }
func (n *davNode) Read([]byte) (int, error)           { return 0, io.EOF }
func (n *davNode) Seek(int64, int) (int64, error)     { return 0, nil }
func (n *davNode) Readdir(int) ([]fs.FileInfo, error) { return nil, syscall.ENOTDIR }
func (n *davNode) Write([]byte) (int, error)          { return 0, os.ErrPermission }
func (n *davNode) Stat() (fs.FileInfo, error)         { return davInfo{n.fi}, nil }

func (n *davNode) DeadProps() (map[xml.Name]webdav.Property, error) { return n.fs.deadProps(n.rel) }

func (n *davNode) Patch(p []webdav.Proppatch) ([]webdav.Propstat, error) {
	return n.fs.patch(n.rel, p)
}

// openWriter is PUT's (and COPY's) file: a temporary beside the target,
// renamed onto it by Close. A new file gets perm (0666 from PUT, the
// source's from COPY) less the process's umask, as open(2) would give it;
// a replaced file keeps its mode.
func (d *davFS) openWriter(ctx context.Context, name, r string, perm os.FileMode) (webdav.File, error) {
	var f *os.File
	var tmp string
	perm = cmp.Or(perm, 0o666)
	mode := perm.Perm() &^ d.s.umask
	err := d.s.id.run(func() error {
		var err error
		if r, err = d.s.resolveLinks(name, r); err != nil {
			return err
		}
		tmp = tempName(r)
		if fi, err := d.s.root.Stat(r); err == nil {
			if fi.IsDir() {
				return syscall.EISDIR
			}
			mode = fi.Mode().Perm()
		}
		if _, err := d.s.root.Stat(path.Dir(r)); err != nil {
			return err
		}
		f, err = d.s.root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		return err
	})
	if err != nil {
		return nil, osErr(ctx, name, err)
	}
	df := &davFile{File: f, fs: d, rel: r, tmp: tmp, mode: mode, ctx: ctx, name: name}
	if st := stateOf(ctx); st != nil && st.ocSum != nil {
		df.sum = st.ocSum.hash()
	}
	return df, nil
}

func (d *davFS) RemoveAll(ctx context.Context, name string) error {
	r, err := d.rel(ctx, name)
	if err != nil {
		return err
	}
	if r == "." {
		return os.ErrPermission
	}
	err = d.s.id.run(func() error {
		if _, err := d.s.root.Lstat(r); err != nil {
			return err
		}
		return d.s.root.RemoveAll(r)
	})
	if err == nil {
		d.s.rekeyProps(r, "")
	}
	return osErr(ctx, name, err)
}

func (d *davFS) Rename(ctx context.Context, oldName, newName string) error {
	from, err := d.rel(ctx, oldName)
	if err != nil {
		return err
	}
	to, err := d.rel(ctx, newName)
	if err != nil {
		return err
	}
	err = d.s.id.run(func() error { return d.s.root.Rename(from, to) })
	if err == nil {
		d.s.rekeyProps(from, to)
	}
	if errors.Is(err, fs.ErrNotExist) && !isEscape(err) {
		// x/net answers any failed rename 403.
		note(ctx, fault.NotFound("path", oldName))
		return os.ErrPermission
	}
	return osErr(ctx, newName, err)
}

func (d *davFS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	r, err := d.rel(ctx, name)
	if err != nil {
		return nil, err
	}
	var fi os.FileInfo
	err = d.s.id.run(func() error {
		var err error
		if noFollow(ctx) {
			fi, err = d.s.root.Lstat(r)
		} else {
			fi, err = d.s.root.Stat(r)
		}
		return err
	})
	if err != nil {
		return nil, osErr(ctx, name, err)
	}
	return davInfo{fi}, nil
}

// davInfo gives x/net the REST API's ETag (findETag asks the FileInfo).
type davInfo struct{ fs.FileInfo }

func (i davInfo) ETag(context.Context) (string, error) { return etagOf(i.FileInfo), nil }

func (f *davFile) Stat() (fs.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return davInfo{fi}, nil
}

// davFile is an open resource; it holds its dead properties and ETag.
type davFile struct {
	*os.File
	fs   *davFS
	rel  string
	tmp  string // set for PUT's writer
	mode fs.FileMode
	ctx  context.Context
	name string
	n    int64
	werr error
	link *string // COPY of a link: Close makes a link to this target
	skip bool    // COPY of a fifo, socket or device: Close writes nothing
	sum  hash.Hash
}

func (f *davFile) Write(p []byte) (int, error) {
	if f.tmp != "" && f.fs.s.maxUpload > 0 && f.n+int64(len(p)) > f.fs.s.maxUpload {
		f.werr = note(f.ctx, f.fs.s.tooLarge())
		return 0, f.werr
	}
	n, err := f.File.Write(p)
	f.n += int64(n)
	if f.sum != nil {
		f.sum.Write(p[:n])
	}
	if err != nil {
		f.werr = note(f.ctx, fsError(f.name, err))
	}
	return n, err
}

// ReadFrom keeps io.Copy on Write (and its limit) rather than the
// kernel's copy paths. It is also how COPY hands over its source (x/net
// copies with io.Copy): a link's copy becomes a link, a fifo, socket or
// device is not copied.
func (f *davFile) ReadFrom(r io.Reader) (int64, error) {
	if n, ok := r.(*davNode); ok && f.tmp != "" {
		if n.fi.Mode()&fs.ModeSymlink != 0 {
			f.link = &n.link
		} else {
			f.skip = true
		}
		return 0, nil
	}
	n, err := io.Copy(struct{ io.Writer }{f}, r)
	if st := stateOf(f.ctx); err == nil && f.tmp != "" && st != nil && st.ocMtime != nil {
		// The whole body is written: the file takes the client's
		// modification time now, before x/net stats it for the ETag it
		// answers.
		t := *st.ocMtime
		err = f.fs.s.id.run(func() error { return f.fs.s.root.Chtimes(f.tmp, t, t) })
		if err != nil {
			f.werr = note(f.ctx, fsError(f.name, err))
		}
	}
	return n, err
}

func (f *davFile) Close() error {
	err := f.File.Close()
	if f.tmp == "" {
		return err
	}
	s := f.fs.s
	if st := stateOf(f.ctx); err == nil && f.werr == nil && f.sum != nil && st != nil && st.ocSum != nil {
		if got := hex.EncodeToString(f.sum.Sum(nil)); got != st.ocSum.sum {
			f.werr = note(f.ctx, fault.Errorf(fault.CodeInvalid, "the content's %s is %s, not the %s of OC-Checksum",
				st.ocSum.algo, got, st.ocSum.sum).WithDetails("OC-Checksum"))
		}
	}
	if err == nil && f.werr == nil && !f.skip { // a skipped COPY only removes its temporary
		unlock := s.locks.lock(f.rel)
		err = s.id.run(func() error {
			if st := stateOf(f.ctx); st != nil && (st.cond.IfMatch != "" || st.cond.IfNoneMatch != "") {
				cur, _ := s.root.Stat(f.rel) // nil when there is no file
				if err := precondition(st.cond, cur); err != nil {
					return err
				}
			}
			if f.link != nil {
				if err := s.root.Remove(f.tmp); err != nil {
					return err
				}
				if err := s.root.Symlink(*f.link, f.tmp); err != nil {
					return err
				}
			} else if err := s.root.Chmod(f.tmp, f.mode); err != nil {
				return err
			}
			return s.root.Rename(f.tmp, f.rel)
		})
		unlock()
		if err == nil {
			return nil
		}
		note(f.ctx, fsError(f.name, err))
	}
	_ = s.id.run(func() error { return s.root.Remove(f.tmp) })
	if err == nil {
		err = f.werr
	}
	return err
}

type storedProp struct {
	Space, Local, Lang string
	XML                string
}

// DeadProps are the stored properties, and oc:checksums when the
// PROPFIND asks for it and the resource is a regular file.
func (f *davFile) DeadProps() (map[xml.Name]webdav.Property, error) {
	props, err := f.fs.deadProps(f.rel)
	if err != nil || f.tmp != "" {
		return props, err
	}
	if st := stateOf(f.ctx); st != nil && st.checksums {
		if p, ok := f.fs.s.ocChecksumProp(f.File, apiPath(f.rel)); ok {
			props[ocChecksums] = p
		}
	}
	return props, nil
}

func (f *davFile) Patch(patches []webdav.Proppatch) ([]webdav.Propstat, error) {
	return f.fs.patch(f.rel, patches)
}

func (d *davFS) deadProps(r string) (map[xml.Name]webdav.Property, error) {
	var list []storedProp
	if db := d.s.deps.Store; db != nil {
		if err := db.View(func(tx *store.Tx) error { _, err := tx.Get(propBucket, apiPath(r), &list); return err }); err != nil {
			return nil, err
		}
	}
	out := make(map[xml.Name]webdav.Property, len(list))
	for _, p := range list {
		n := xml.Name{Space: p.Space, Local: p.Local}
		out[n] = webdav.Property{XMLName: n, Lang: p.Lang, InnerXML: []byte(p.XML)}
	}
	return out, nil
}

func (d *davFS) patch(r string, patches []webdav.Proppatch) ([]webdav.Propstat, error) {
	db := d.s.deps.Store
	if db == nil {
		return nil, errors.New("no store for dead properties")
	}
	pstat := webdav.Propstat{Status: http.StatusOK}
	err := db.Update(func(tx *store.Tx) error {
		var list []storedProp
		if _, err := tx.Get(propBucket, apiPath(r), &list); err != nil {
			return err
		}
		m := map[xml.Name]storedProp{}
		for _, p := range list {
			m[xml.Name{Space: p.Space, Local: p.Local}] = p
		}
		for _, patch := range patches {
			for _, p := range patch.Props {
				pstat.Props = append(pstat.Props, webdav.Property{XMLName: p.XMLName})
				if patch.Remove {
					delete(m, p.XMLName)
				} else {
					m[p.XMLName] = storedProp{Space: p.XMLName.Space, Local: p.XMLName.Local, Lang: p.Lang, XML: string(p.InnerXML)}
				}
			}
		}
		list = slices.Collect(maps.Values(m))
		if len(list) == 0 {
			return tx.Delete(propBucket, apiPath(r))
		}
		return tx.Put(propBucket, apiPath(r), list)
	})
	return []webdav.Propstat{pstat}, err
}

// rekeyProps carries the properties of from and everything under it to
// to, or forgets them when to is empty.
func (s *Service) rekeyProps(from, to string) {
	db := s.deps.Store
	if db == nil {
		return
	}
	fk := apiPath(from)
	_ = db.Update(func(tx *store.Tx) error {
		type kv struct {
			k string
			v []byte
		}
		var found []kv
		collect := func(k string, raw []byte) error {
			if k == fk || strings.HasPrefix(k, strings.TrimSuffix(fk, "/")+"/") {
				found = append(found, kv{k, append([]byte(nil), raw...)})
			}
			return nil
		}
		if err := tx.ForEachPrefix(propBucket, fk, collect); err != nil {
			return err
		}
		for _, e := range found {
			if err := tx.Delete(propBucket, e.k); err != nil {
				return err
			}
			if to != "" {
				if err := tx.PutRaw(propBucket, apiPath(to)+e.k[len(fk):], e.v); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// davOutcome turns an error answer of x/net (its status and status text)
// into the service's error: what the file system noted, else one made
// from the status.
func (s *Service) davOutcome(req *http.Request, status int, st *reqState, name string) error {
	if st.err != nil && (status >= 400 || status == 0) {
		return st.err
	}
	if ih := req.Header.Get("If"); status == http.StatusPreconditionFailed && ih != "" && !strings.Contains(ih, "[") &&
		s.dav.locks.locked(name) {
		// x/net answers 412 when no lock token of an If header holds; when
		// the header names only tokens and the resource is locked, the
		// answer is 423 Locked (RFC 4918 9.10.6). With entity tags in it,
		// the failed state check stays 412.
		status = http.StatusLocked
	}
	switch {
	case status == http.StatusNotFound:
		return fault.NotFound("path", name)
	case status >= 400:
		return davStatusError(req.Method, status, st.xerr)
	}
	return nil
}

// checkNamespaces refuses xmlns:prefix="" declarations.
func checkNamespaces(raw []byte) error {
	d := xml.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := d.RawToken()
		if err != nil {
			return nil // x/net reports malformed XML itself
		}
		if se, ok := tok.(xml.StartElement); ok {
			for _, a := range se.Attr {
				if a.Name.Space == "xmlns" && a.Value == "" {
					return fault.Invalid("body", "declares namespace prefix %q as empty, which XML Namespaces forbid", a.Name.Local)
				}
			}
		}
	}
}

// validPrefix accepts a path prefix such as /_/files.
func validPrefix(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || len(p) > 200 {
		return false
	}
	odd := func(r rune) bool {
		return !(r == '/' || r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}
	return !strings.ContainsFunc(p, odd) && !strings.Contains(p, "..")
}

// davPreconditions checks If-Match, If-None-Match and the entity tags in
// an If header (RFC 4918 10.4) against the resource's current ETag.
func (s *Service) davPreconditions(req *http.Request, name string) error {
	var etag string
	if fi, err := s.Stat(name); err == nil {
		etag = cmp.Or(fi.ETag, "dir")
	}
	if im := req.Header.Get("If-Match"); im != "" && (etag == "" || !etagMatch(im, etag)) {
		return fault.Errorf(fault.CodePreconditionFailed, "%s changed since the ETag in If-Match was read", name).WithDetails("If-Match")
	}
	if inm := req.Header.Get("If-None-Match"); inm != "" && etag != "" && (inm == "*" || etagMatch(inm, etag)) &&
		req.Method != http.MethodGet && req.Method != http.MethodHead {
		return fault.Errorf(fault.CodePreconditionFailed, "%s exists (If-None-Match)", name).WithDetails("If-None-Match")
	}
	ih := req.Header.Get("If")
	if ih == "" || !strings.Contains(ih, "[") {
		return nil
	}
	if !ifHeaderMayPass(ih, etag) {
		return fault.Errorf(fault.CodePreconditionFailed, "no list of the If header matches %s's ETag", name).WithDetails("If")
	}
	return nil
}

// ifHeaderMayPass evaluates only the entity-tag conditions of each list
// of an If header; lock tokens are left to x/net. A list passes when all
// its [etag] conditions hold; the header passes when any list does.
func ifHeaderMayPass(h, etag string) bool {
	anyList := false
	for {
		_, rest, open := strings.Cut(h, "(")
		list, rest, closed := strings.Cut(rest, ")")
		if !open || !closed {
			break
		}
		h = rest
		anyList = true
		ok := true
		for list != "" {
			var not, found bool
			list, not = strings.CutPrefix(strings.TrimSpace(list), "Not")
			list = strings.TrimSpace(list)
			switch {
			case strings.HasPrefix(list, "<"):
				if _, list, found = strings.Cut(list, ">"); !found {
					return false
				}
			case strings.HasPrefix(list, "["):
				var tag string
				if tag, list, found = strings.Cut(list[1:], "]"); !found {
					return false
				}
				match := etag != "" && (tag == etag || strings.TrimPrefix(tag, "W/") == etag)
				if match == not {
					ok = false
				}
			default:
				list = ""
			}
		}
		if ok {
			return true
		}
	}
	return !anyList
}
