package identity_test

import (
	"net"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
)

// BenchmarkAuthenticate measures Authenticate alone (no HTTP, no signing):
// go test -run '^$' -bench Authenticate ./control/identity
func BenchmarkAuthenticate(b *testing.B) {
	e := newEnv(b)
	login := e.account("bench@example.com")
	jwt := login["token"].(string)
	svc := e.must(e.call("POST", "/api/v1/auth/tokens", map[string]any{"alias": "b"}, jwt), 201).str("data", "token")
	app := e.host.App()
	for _, tc := range []struct{ name, tok string }{{"session-jwt", jwt}, {"svc-token", svc}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var fctx fasthttp.RequestCtx
				fctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
				for pb.Next() {
					fctx.Request.Header.Set("Authorization", "Bearer "+tc.tok)
					c := app.AcquireCtx(&fctx).(fiber.Ctx)
					if _, err := e.svc.Authenticate(c); err != nil {
						b.Fatal(err)
					}
					app.ReleaseCtx(c)
					fctx.ResetUserValues()
				}
			})
		})
	}
}
