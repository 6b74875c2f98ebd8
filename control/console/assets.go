package console

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v3"
)

// dist is the Vite build of web/ (make build). A checkout that has not
// built it holds only dist/.gitkeep, so `go build` and `go vet` work
// before any npm step; such a binary answers its pages with notBuilt.
//
//go:embed all:dist
var dist embed.FS

// pagesJSON is the console's page list, shared with its router
// (web/src/pages.json), so the server answers exactly the pages the
// console has and every other path keeps the API's 404 envelope.
//
//go:embed web/src/pages.json
var pagesJSON []byte

// CSP is the Content-Security-Policy of every console page: scripts and
// styles only from the console's own files (no inline script or style),
// calls only to this origin, images from here or data:/blob: URLs (the
// locally drawn QR code, image icons), never framed.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; " +
	"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const notBuilt = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>deckhand console not built</title></head>
<body><main><h1>The console is not built</h1>
<p>This deckhand-control was built without its web console: build it with <code>make build</code>,
which runs npm ci and Vite in control/console/web.</p></main></body></html>
`

// asset is one file of the build, with its gzip form when that is smaller.
type asset struct {
	body, gz []byte
	ctype    string
	hashed   bool // under assets/: the name carries a content hash
}

// pageSet is the console's routes: exact paths and patterns whose
// ":name" segments match any one segment.
type pageSet struct {
	exact    map[string]bool
	patterns [][]string
}

func loadPages() (pageSet, error) {
	var lists struct {
		Public   []string `json:"public"`
		SignedIn []string `json:"signedIn"`
	}
	if err := json.Unmarshal(pagesJSON, &lists); err != nil {
		return pageSet{}, err
	}
	ps := pageSet{exact: map[string]bool{}}
	for _, p := range append(lists.Public, lists.SignedIn...) {
		if strings.Contains(p, "/:") {
			ps.patterns = append(ps.patterns, strings.Split(p, "/"))
		} else {
			ps.exact[p] = true
		}
	}
	return ps, nil
}

func (ps pageSet) match(p string) bool {
	if ps.exact[p] {
		return true
	}
	segs := strings.Split(p, "/")
	return slices.ContainsFunc(ps.patterns, func(pat []string) bool {
		return slices.EqualFunc(pat, segs, func(s, seg string) bool {
			if strings.HasPrefix(s, ":") {
				return seg != "" && !strings.ContainsAny(seg, ".%")
			}
			return s == seg
		})
	})
}

// loadAssets reads the embedded build: index.html and every other file,
// keyed by URL path.
func loadAssets() (index *asset, files map[string]*asset, err error) {
	files = map[string]*asset{}
	err = fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		body, err := dist.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, "dist")
		a := &asset{body: body, ctype: cmp.Or(mime.TypeByExtension(path.Ext(rel)), "application/octet-stream"),
			hashed: strings.HasPrefix(rel, "/assets/")}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		if buf.Len() < len(body) {
			a.gz = buf.Bytes()
		}
		files[rel] = a
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	index = cmp.Or(files["/index.html"], &asset{body: []byte(notBuilt), ctype: "text/html; charset=utf-8"})
	delete(files, "/index.html")
	return index, files, nil
}

// Built reports whether this binary embeds the console's build (not the
// placeholder of a checkout that never ran the npm step).
func Built() bool {
	_, err := fs.Stat(dist, "dist/index.html")
	return err == nil
}

// Pages is host middleware: it answers GET and HEAD for the console's
// pages (index.html, the single-page app routes its router knows) and its
// built files, and passes everything else on untouched, so the API's
// routes, their 404 envelope and the kernel's own paths are untouched.
func (s *Service) Pages(c fiber.Ctx) error {
	m := c.Method()
	if m != http.MethodGet && m != http.MethodHead {
		return c.Next()
	}
	p := c.Path()
	if strings.HasPrefix(p, "/api/") {
		return c.Next()
	}
	a := s.files[p]
	if a == nil {
		if !s.pages.match(p) {
			return c.Next()
		}
		a = s.index
	}
	h := &c.Response().Header
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// The verification and reset pages carry their token in the query.
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Vary", "Accept-Encoding")
	if a.hashed {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	h.SetContentType(a.ctype)
	body := a.body
	if a.gz != nil && acceptsGzip(c.Get(fiber.HeaderAcceptEncoding)) {
		h.Set(fiber.HeaderContentEncoding, "gzip")
		body = a.gz
	}
	c.Status(http.StatusOK)
	return c.Send(body)
}

func acceptsGzip(v string) bool {
	for _, part := range strings.Split(v, ",") {
		name, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}
