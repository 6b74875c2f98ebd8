package files

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v3"
	"golang.org/x/net/webdav"

	"deckhand/platform"
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
	if errors.Is(err, fs.ErrExist) && !isNotEmpty(err) {
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
			err = platform.Errorf(platform.CodeConflict, "%s changed during the request", name).WithDetails("path")
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
	if perm == 0 {
		perm = 0o666
	}
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
		d.s.dropProps(r)
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
		d.s.moveProps(from, to)
	}
	if errors.Is(err, fs.ErrNotExist) && !isEscape(err) {
		// x/net answers any failed rename 403.
		note(ctx, platform.NotFound("path", oldName))
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
	if f.skip {
		_ = s.id.run(func() error { return s.root.Remove(f.tmp) })
		return err
	}
	if st := stateOf(f.ctx); err == nil && f.werr == nil && f.sum != nil && st != nil && st.ocSum != nil {
		if got := hex.EncodeToString(f.sum.Sum(nil)); got != st.ocSum.sum {
			f.werr = note(f.ctx, platform.Errorf(platform.CodeInvalid, "the content's %s is %s, not the %s of OC-Checksum",
				st.ocSum.algo, got, st.ocSum.sum).WithDetails("OC-Checksum"))
		}
	}
	if err == nil && f.werr == nil {
		unlock := s.locks.lock(f.rel)
		err = s.id.run(func() error {
			if st, ok := f.ctx.Value(stateKey{}).(*reqState); ok && (st.cond.IfMatch != "" || st.cond.IfNoneMatch != "") {
				var cur fs.FileInfo
				if fi, err := s.root.Stat(f.rel); err == nil {
					cur = fi
				}
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

// ETag makes x/net use the REST API's validator.
func (f *davFile) ETag(ctx context.Context) (string, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return "", err
	}
	return etagOf(fi), nil
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
		if err := db.View(func(tx *store.Tx) error { _, err := tx.Get(propBucket, propKey(r), &list); return err }); err != nil {
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
		if _, err := tx.Get(propBucket, propKey(r), &list); err != nil {
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
		list = list[:0]
		for _, p := range m {
			list = append(list, p)
		}
		if len(list) == 0 {
			return tx.Delete(propBucket, propKey(r))
		}
		return tx.Put(propBucket, propKey(r), list)
	})
	return []webdav.Propstat{pstat}, err
}

func propKey(r string) string { return apiPath(r) }

// dropProps forgets the properties of r and everything under it.
func (s *Service) dropProps(r string) {
	s.rekeyProps(r, "")
}

// moveProps carries properties from one path (and its subtree) to another.
func (s *Service) moveProps(from, to string) {
	s.rekeyProps(from, to)
}

func (s *Service) rekeyProps(from, to string) {
	db := s.deps.Store
	if db == nil {
		return
	}
	fk := propKey(from)
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
				if err := tx.PutRaw(propBucket, propKey(to)+e.k[len(fk):], e.v); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// handleDAV answers a WebDAV request; a failure becomes a DAV:error or
// the JSON error (davFail).
func (s *Service) handleDAV(c fiber.Ctx) error {
	var bodyRead bool
	err := s.serveDAV(c, &bodyRead)
	if err == nil {
		return nil
	}
	// An error answer keeps the connection when the request had no body
	// or its body was read whole (WebDAV clients probe many missing
	// names); else the unread rest would be taken for the next request.
	if !bodyRead && c.Request().Header.ContentLength() != 0 {
		platform.AbandonBody(c)
	}
	return s.davFail(c, err)
}

// serveDAV runs x/net/webdav inside Fiber. The request body is handed
// over as the host's stream (the generic adaptor would read it all into
// memory first); GET of a file goes through the REST download (sendfile,
// ranges); PROPFIND's multistatus is streamed (streamDAV); other answers
// are small and buffered.
func (s *Service) serveDAV(c fiber.Ctx, bodyRead *bool) error {
	if err := s.checkLength(int64(c.Request().Header.ContentLength())); err != nil {
		return err
	}
	uri := string(c.Request().RequestURI())
	if strings.ContainsRune(uri, '#') {
		return platform.Invalid("path", "must not carry a fragment (#)")
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return platform.Invalid("path", "is not a valid URL path")
	}
	name := strings.TrimPrefix(u.Path, "/dav")
	if name == "" {
		name = "/"
		u.Path = "/dav/"
	}
	// Behind the agent's gateway (/_/files/dav/...) hrefs in answers and
	// the Destination of COPY/MOVE carry the gateway's prefix, which it
	// passes as X-Forwarded-Prefix (and strips from clients).
	h := s.dav.h
	host := string(c.Request().Host())
	if fp := c.Get("X-Forwarded-Prefix"); fp != "" && validPrefix(fp) {
		if fh := c.Get("X-Forwarded-Host"); fh != "" {
			host = fh // the Destination header names the gateway's host
		}
		hc := *h
		hc.Prefix = fp + "/dav"
		h = &hc
		u.Path = fp + u.Path
	}
	method := c.Method()
	r, err := rel("path", name)
	if err != nil {
		return err
	}
	if method == http.MethodGet || method == http.MethodHead {
		// Everything but a collection (files, links to them, and fifos,
		// devices and sockets, which it refuses) goes through the REST
		// download, with its headers.
		var dir bool
		err := s.id.run(func() error {
			fi, err := s.root.Stat(r)
			dir = err == nil && fi.IsDir()
			return err
		})
		if err == nil && !dir {
			return s.serveFile(c, name)
		}
	}
	st := &reqState{cond: WriteInput{Path: name, Overwrite: true, IfMatch: c.Get(fiber.HeaderIfMatch), IfNoneMatch: c.Get(fiber.HeaderIfNoneMatch)},
		noFollow: method == "COPY" || method == "MOVE" || method == "DELETE"}
	if method == http.MethodPut {
		if v := c.Get("OC-Checksum"); v != "" {
			if st.ocSum, err = parseOCChecksum(v); err != nil {
				return err
			}
		}
		if v := c.Get("X-OC-Mtime"); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return platform.Invalid("X-OC-Mtime", "must be whole seconds since 1970-01-01 UTC")
			}
			t := time.Unix(n, 0)
			st.ocMtime = &t
		}
	}
	ctx := context.WithValue(c.Context(), stateKey{}, st)
	var lockLife time.Duration
	var depthZero bool
	if method == "LOCK" {
		var err error
		if lockLife, err = lockTimeout(c.Get("Timeout")); err != nil {
			return err
		}
	}
	var rb io.Reader = c.Request().BodyStream()
	if rb == nil {
		rb = bytes.NewReader(c.Body())
	}
	if method == "PROPFIND" || method == "PROPPATCH" || method == "LOCK" {
		// XML request bodies are small; x/net accepts a namespace prefix
		// bound to "" (invalid in XML Namespaces 1.0), so check first.
		raw, err := io.ReadAll(io.LimitReader(rb, 1<<20+1))
		if err != nil {
			return platform.Invalid("body", "could not be read")
		}
		if len(raw) > 1<<20 {
			return platform.Invalid("body", "must be at most 1 MiB of XML")
		}
		*bodyRead = true
		if d := strings.ToLower(strings.TrimSpace(c.Get("Depth"))); method == "PROPFIND" && (d == "" || d == "infinity") {
			// RFC 4918 9.1 lets a server refuse infinite depth on a
			// collection; a walk of the whole tree is one request's worth
			// of unbounded work (a few links to "." make it exponential).
			// On anything else infinity means 0, and x/net is told 0, so a
			// file swapped for a directory meanwhile is not walked either.
			var dir bool
			_ = s.id.run(func() error {
				fi, err := s.root.Stat(r)
				dir = err == nil && fi.IsDir()
				return nil
			})
			if dir {
				return finiteDepthOnly()
			}
			depthZero = true
		}
		if err := checkNamespaces(raw); err != nil {
			return err
		}
		st.checksums = method == "PROPFIND" && asksChecksums(raw)
		if method == "LOCK" {
			if li, shared := sharedLockRequest(raw); shared {
				return s.lockShared(c, name, u.Path, li, lockLife)
			}
		}
		rb = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rb)
	if err != nil {
		return platform.Invalid("path", "is not a valid URL path")
	}
	req.RequestURI = u.RequestURI()
	req.Host = host
	req.ContentLength = int64(c.Request().Header.ContentLength())
	for k, v := range c.Request().Header.All() {
		req.Header.Add(string(k), string(v))
	}
	if method == "LOCK" {
		// x/net writes the Timeout it read into the answer: hand it the
		// capped one.
		req.Header.Set("Timeout", timeoutHeader(lockLife))
	}
	if depthZero {
		req.Header.Set("Depth", "0")
	}
	if err := s.davPreconditions(req, name); err != nil {
		return err
	}
	if method == "PROPFIND" {
		return s.streamDAV(c, h, req, st, name)
	}
	rw := &davWriter{h: http.Header{}, c: c}
	if method == "LOCK" {
		rw.h.Set("Timeout", timeoutHeader(lockLife))
	}
	h.ServeHTTP(rw, req)
	if err := s.davOutcome(req, rw.status, st, name); err != nil {
		c.Response().ResetBody()
		return err
	}
	if st.ocMtime != nil && rw.status < 300 {
		rw.h.Set("X-OC-Mtime", "accepted") // how ownCloud says the time was kept
	}
	rw.flushHeader()
	return nil
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
		return platform.NotFound("path", name)
	case status >= 400:
		return davStatusError(req.Method, status, st.xerr)
	}
	return nil
}

// streamDAV runs x/net's PROPFIND in a goroutine of its own and streams
// its multistatus: x/net writes each response element as the walk builds
// it, and the status and headers go out with the first byte, so the
// answer is never held whole in memory and a client that stops reading
// stops the walk. An answer that fails before its first byte (404, a bad
// body) is answered as any other error.
func (s *Service) streamDAV(c fiber.Ctx, h *webdav.Handler, req *http.Request, st *reqState, name string) error {
	// The goroutine may outlive this handler (fasthttp runs the stream
	// writer after it returns), so its request holds nothing of Fiber's.
	req = req.WithContext(context.WithValue(context.Background(), stateKey{}, st))
	pr, pw := io.Pipe()
	rw := &davStream{h: http.Header{}, pw: pw, started: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rw, req)
		_ = pw.Close()
	}()
	select {
	case <-rw.started:
	case <-done:
		select {
		case <-rw.started:
		default:
			if err := s.davOutcome(req, rw.status, st, name); err != nil {
				return err
			}
			rw.copyHeader(c)
			return nil
		}
	}
	rw.copyHeader(c)
	return c.SendStreamWriter(func(bw *bufio.Writer) {
		_, err := io.Copy(bw, pr)
		if err == nil {
			err = bw.Flush()
		}
		// A client gone away ends the walk at its next write.
		_ = pr.CloseWithError(errors.Join(io.ErrClosedPipe, err))
		<-done
		if rw.failed {
			s.deps.Logger.Error("PROPFIND ended early", "service", "files", "path", name, "err", st.xerr)
		}
	})
}

// davStream is the ResponseWriter of a streamed answer: the body of a
// success goes into the pipe, that of an error answer (x/net's status
// text) is dropped.
type davStream struct {
	h       http.Header
	status  int
	pw      *io.PipeWriter
	started chan struct{}
	// failed: x/net gave up after the answer started (a multistatus it
	// had to cut short); the status text it then writes is dropped.
	failed bool
}

func (w *davStream) Header() http.Header { return w.h }

func (w *davStream) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	} else if code >= 400 {
		w.failed = true
	}
}

func (w *davStream) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status >= 400 || w.failed {
		return len(p), nil
	}
	select {
	case <-w.started:
	default:
		close(w.started)
	}
	return w.pw.Write(p)
}

func (w *davStream) copyHeader(c fiber.Ctx) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	for k, vs := range w.h {
		for i, v := range vs {
			if i == 0 {
				c.Set(k, v)
			} else {
				c.Append(k, v)
			}
		}
	}
	c.Status(w.status)
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
					return platform.Invalid("body", "declares namespace prefix %q as empty, which XML Namespaces forbid", a.Name.Local)
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
	for _, r := range p {
		if !(r == '/' || r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return !strings.Contains(p, "..")
}

// davPreconditions checks If-Match, If-None-Match and the entity tags in
// an If header (RFC 4918 10.4) against the resource's current ETag.
func (s *Service) davPreconditions(req *http.Request, name string) error {
	var etag string
	if fi, err := s.Stat(name); err == nil && fi.ETag != "" {
		etag = fi.ETag
	} else if err == nil {
		etag = "dir"
	}
	if im := req.Header.Get("If-Match"); im != "" && (etag == "" || !etagMatch(im, etag)) {
		return platform.Errorf(platform.CodePreconditionFailed, "%s changed since the ETag in If-Match was read", name).WithDetails("If-Match")
	}
	if inm := req.Header.Get("If-None-Match"); inm != "" && etag != "" && (inm == "*" || etagMatch(inm, etag)) &&
		req.Method != http.MethodGet && req.Method != http.MethodHead {
		return platform.Errorf(platform.CodePreconditionFailed, "%s exists (If-None-Match)", name).WithDetails("If-None-Match")
	}
	ih := req.Header.Get("If")
	if ih == "" || !strings.Contains(ih, "[") {
		return nil
	}
	if !ifHeaderMayPass(ih, etag) {
		return platform.Errorf(platform.CodePreconditionFailed, "no list of the If header matches %s's ETag", name).WithDetails("If")
	}
	return nil
}

// ifHeaderMayPass evaluates only the entity-tag conditions of each list
// of an If header; lock tokens are left to x/net. A list passes when all
// its [etag] conditions hold; the header passes when any list does.
func ifHeaderMayPass(h, etag string) bool {
	anyList := false
	for {
		i := strings.IndexByte(h, '(')
		if i < 0 {
			break
		}
		j := strings.IndexByte(h[i:], ')')
		if j < 0 {
			break
		}
		list := h[i+1 : i+j]
		h = h[i+j+1:]
		anyList = true
		ok := true
		for list != "" {
			list = strings.TrimSpace(list)
			not := false
			if strings.HasPrefix(list, "Not") {
				not = true
				list = strings.TrimSpace(list[3:])
			}
			switch {
			case strings.HasPrefix(list, "<"):
				k := strings.IndexByte(list, '>')
				if k < 0 {
					return false
				}
				list = list[k+1:]
			case strings.HasPrefix(list, "["):
				k := strings.IndexByte(list, ']')
				if k < 0 {
					return false
				}
				tag := list[1:k]
				list = list[k+1:]
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

// davWriter buffers the (small) answers of x/net/webdav into Fiber.
type davWriter struct {
	h      http.Header
	c      fiber.Ctx
	status int
	sent   bool
}

func (w *davWriter) Header() http.Header { return w.h }

func (w *davWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *davWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.c.Write(p)
}

func (w *davWriter) flushHeader() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	for k, vs := range w.h {
		for i, v := range vs {
			if i == 0 {
				w.c.Set(k, v)
			} else {
				w.c.Append(k, v)
			}
		}
	}
	w.c.Status(w.status)
}

// serveFile answers GET of a file through the REST download.
func (s *Service) serveFile(c fiber.Ctx, name string) error {
	out, err := s.fileContent(name, false, FileConditions{IfNoneMatch: c.Get(fiber.HeaderIfNoneMatch),
		Range: c.Get(fiber.HeaderRange), IfRange: c.Get(fiber.HeaderIfRange)})
	if err != nil {
		return err
	}
	for k, v := range map[string]string{fiber.HeaderContentType: out.Type, fiber.HeaderETag: out.ETag,
		fiber.HeaderLastModified: out.LastModified, fiber.HeaderAcceptRanges: out.AcceptRanges,
		fiber.HeaderContentRange: out.Range, fiber.HeaderXContentTypeOptions: out.NoSniff,
		fiber.HeaderContentSecurityPolicy: out.CSP} {
		if v != "" {
			c.Set(k, v)
		}
	}
	c.Status(cmp.Or(out.Status, http.StatusOK))
	if out.Body == nil {
		return nil
	}
	return c.SendStream(out.Body, int(out.Length))
}
