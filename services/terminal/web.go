package terminal

import (
	"bytes"
	"compress/gzip"
	"embed"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v3"

	"deckhand/platform"
)

// web holds the page and the xterm.js files copied from npm by
// scripts/e2e/terminal-vendor.mjs (committed, so builds need no npm).
//
//go:embed web/index.html web/app.js web/style.css web/xterm.js web/xterm.css web/addon-fit.js
var web embed.FS

var assetTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".html": "text/html; charset=utf-8",
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

func sendAsset(c fiber.Ctx, name string) error {
	assetsOnce.Do(loadAssets)
	a, ok := assets[name]
	if !ok {
		return platform.NotFound("asset", name)
	}
	c.Set(fiber.HeaderContentType, a.ctype)
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	if name == "index.html" {
		c.Set(fiber.HeaderCacheControl, "no-cache")
	} else {
		c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	}
	if strings.Contains(c.Get(fiber.HeaderAcceptEncoding), "gzip") {
		c.Set(fiber.HeaderContentEncoding, "gzip")
		return c.Send(a.gz)
	}
	return c.Send(a.plain)
}

func (svc *Service) handleIndex(c fiber.Ctx) error { return sendAsset(c, "index.html") }

func (svc *Service) handleAsset(c fiber.Ctx) error {
	name := c.Params("name")
	if name == "index.html" {
		return platform.NotFound("asset", name)
	}
	return sendAsset(c, name)
}
