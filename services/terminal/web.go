package terminal

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"strings"
	"sync"

	"deckhand/platform/fault"
)

// web holds the page and the xterm.js files copied from npm by
// scripts/e2e/terminal-vendor.mjs (committed, so builds need no npm).
//
//go:embed web/index.html web/app.js web/style.css web/xterm.js web/xterm.css web/addon-fit.js web/favicon.svg
var web embed.FS

var assetTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".html": "text/html; charset=utf-8",
	".svg":  "image/svg+xml",
}

type asset struct {
	plain, gz []byte
	ctype     string
}

var (
	assetsOnce sync.Once
	assets     map[string]asset
)

func loadAssets() {
	assets = map[string]asset{}
	entries, _ := web.ReadDir("web")
	for _, e := range entries {
		b, err := web.ReadFile("web/" + e.Name())
		if err != nil {
			continue
		}
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		_, _ = w.Write(b)
		_ = w.Close()
		ext := e.Name()[strings.LastIndexByte(e.Name(), '.'):]
		assets[e.Name()] = asset{plain: b, gz: z.Bytes(), ctype: assetTypes[ext]}
	}
}

// AssetFile is one file of the web terminal.
type AssetFile struct {
	ContentType     string `header:"Content-Type" doc:"the file's media type"`
	Vary            string `header:"Vary"`
	CacheControl    string `header:"Cache-Control" doc:"no-cache for the page, an hour for the scripts and styles"`
	ContentEncoding string `header:"Content-Encoding" doc:"gzip when the request accepts it"`
	Body            []byte
}

// AssetRef names a file of the web terminal.
type AssetRef struct {
	Name           string `path:"name" doc:"app.js, style.css, xterm.js, xterm.css, addon-fit.js or favicon.svg"`
	AcceptEncoding string `header:"Accept-Encoding" doc:"gzip: the file is sent compressed"`
}

// PageRequest is a request for the page.
type PageRequest struct {
	AcceptEncoding string `header:"Accept-Encoding" doc:"gzip: the page is sent compressed"`
}

func assetFile(name, acceptEncoding string) (AssetFile, error) {
	assetsOnce.Do(loadAssets)
	a, ok := assets[name]
	if !ok {
		return AssetFile{}, fault.NotFound("asset", name)
	}
	out := AssetFile{ContentType: a.ctype, Vary: "Accept-Encoding", CacheControl: "public, max-age=3600", Body: a.plain}
	if name == "index.html" {
		out.CacheControl = "no-cache"
	}
	if strings.Contains(acceptEncoding, "gzip") {
		out.ContentEncoding, out.Body = "gzip", a.gz
	}
	return out, nil
}

// Index answers the web terminal's page.
func (svc *Service) Index(_ context.Context, in PageRequest) (AssetFile, error) {
	return assetFile("index.html", in.AcceptEncoding)
}

// Asset answers a static file of the page (the page itself only at /).
func (svc *Service) Asset(_ context.Context, in AssetRef) (AssetFile, error) {
	if in.Name == "index.html" {
		return AssetFile{}, fault.NotFound("asset", in.Name)
	}
	return assetFile(in.Name, in.AcceptEncoding)
}
