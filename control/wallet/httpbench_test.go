package wallet_test

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"

	"deckhand/control/wallet"
	"deckhand/platform"
	"deckhand/platform/auth"
	"deckhand/platform/platformtest"
	"deckhand/platform/store"
)

// BenchmarkHTTP is the wallet's HTTP layer on the control plane's host
// (envelope errors, an Authenticator, the routes' policies): a read
// without input, a path parameter, a query of four parameters, a JSON
// body refused by its rules, and one accepted and answered (a replayed
// transfer: the idempotency key's receipt, so the store is read, not
// written). Requests go straight into the fasthttp handler so the loopback
// network does not drown the figure; cpu-ns/op (the process's CPU time
// per request) is the figure a shared machine's load distorts least.
// Compare trees with
//
//	go test -run '^$' -bench HTTP -count 10 ./control/wallet
func BenchmarkHTTP(b *testing.B) {
	db, err := store.Open(filepath.Join(b.TempDir(), "s.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	f := newFixtureTB(b, db, wallet.Config{TransferFeeBPS: 500})
	ctx := f.userTB(b, "u1", "100.00")
	r, err := f.w.Transfer(ctx, wallet.TransferInput{Amount: "1.00", IdempotencyKey: ptr("bench")})
	if err != nil {
		b.Fatal(err)
	}
	signedIn := platform.AuthenticatorFunc(func(fiber.Ctx) (*auth.Principal, error) {
		return &auth.Principal{UserID: "u1", Role: auth.RoleUser, Kind: auth.KindSession, SessionID: "s"}, nil
	})
	h := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "control"}, Style: platform.EnvelopeErrors, Auth: signedIn,
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))}, f.w.Routes())
	handler := h.App().Handler()
	for _, c := range []struct {
		name, method, uri, body string
		status                  int
		has                     string
	}{
		{"balances", "GET", "/api/v1/wallet/balances", "", 200, `"general_balance":"99.00"`},
		{"transaction", "GET", "/api/v1/wallet/transactions/" + r.TransactionID, "", 200, r.TransactionID},
		{"list", "GET", "/api/v1/wallet/transactions?page=1&limit=20&sort_by=amount&sort_order=asc", "", 200, `"total":2`},
		{"refused-body", "POST", "/api/v1/wallet/transfer-to-ai", `{"amount":"1.005","idempotency_key":"x"}`, 400, "amount"},
		{"replayed-transfer", "POST", "/api/v1/wallet/transfer-to-ai", `{"amount":"1.00","idempotency_key":"bench"}`, 200, `"replayed":true`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var rc fasthttp.RequestCtx
			send := func() {
				rc.Request.Reset()
				rc.Response.Reset()
				rc.Request.Header.SetMethod(c.method)
				rc.Request.SetRequestURI(c.uri)
				rc.Request.Header.SetHost("127.0.0.1")
				if c.body != "" {
					rc.Request.Header.SetContentType("application/json")
					rc.Request.SetBodyString(c.body)
				}
				handler(&rc)
			}
			send()
			if rc.Response.StatusCode() != c.status || !strings.Contains(string(rc.Response.Body()), c.has) {
				b.Fatalf("%s %s: %d %s", c.method, c.uri, rc.Response.StatusCode(), rc.Response.Body())
			}
			b.ReportAllocs()
			cpu := platformtest.CPUTime()
			for b.Loop() {
				send()
			}
			platformtest.ReportCPU(b, cpu)
		})
	}
}
