package server_test

import (
	"io"
	"log/slog"
	"testing"

	"deckhand/control/server"
	"deckhand/platform/platformtest"

	"github.com/valyala/fasthttp"
)

// BenchmarkResponse1KiB measures the whole control-plane response path
// (kernel middleware, routing, handler, Finalize) for a 1 KiB body, with
// and without response signing, in one run. The difference of the two is
// the signing overhead per response. Requests go straight into the fasthttp
// handler so the loopback network does not drown the figure.
//
//	go test -run '^$' -bench Response1KiB -count 10 ./control/server
func BenchmarkResponse1KiB(b *testing.B) {
	for _, mode := range []struct {
		name    string
		signing bool
	}{{"nosign", false}, {"sign", true}} {
		b.Run(mode.name, func(b *testing.B) {
			cfg := server.DefaultConfig()
			cfg.Listen = "127.0.0.1:0"
			cfg.Data = b.TempDir()
			cfg.Signing = mode.signing
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
			srv, err := server.New(cfg, withTest(&testDomain{}))
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			h := srv.Host().App().Handler()
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod("GET")
			ctx.Request.SetRequestURI("/api/v1/test/kib")
			h(&ctx)
			if ctx.Response.StatusCode() != 200 || len(ctx.Response.Body()) != 1024 ||
				(len(ctx.Response.Header.Peek("X-Service-Signature")) > 0) != mode.signing {
				b.Fatalf("unexpected response: %d, %d bytes, signature %q", ctx.Response.StatusCode(),
					len(ctx.Response.Body()), ctx.Response.Header.Peek("X-Service-Signature"))
			}
			b.SetBytes(1024)
			b.ReportAllocs()
			cpu := platformtest.CPUTime()
			for b.Loop() {
				ctx.Response.Reset()
				h(&ctx)
			}
			platformtest.ReportCPU(b, cpu)
		})
	}
}
