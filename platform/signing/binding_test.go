package signing_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	clockpkg "deckhand/platform/clock"
	"deckhand/platform/signing"
)

// boundServer is a fiber app whose responses the signer finalizes, as the
// control plane's are: /doc answers 304 when If-None-Match names its
// ETag, else 200 with an envelope; /gone answers a 404 envelope.
func boundServer(t *testing.T, signer *signing.Signer) *fiber.App {
	app := fiber.New()
	app.Get("/doc", func(c fiber.Ctx) error {
		c.Set("ETag", `"file:v3"`)
		if c.Get("If-None-Match") == `"file:v3"` {
			c.Status(http.StatusNotModified)
		} else {
			_ = c.Status(200).SendString(`{"statusCode":200,"message":"ok","data":{"v":3}}`)
		}
		signer.Finalize(c)
		return nil
	})
	app.Get("/gone", func(c fiber.Ctx) error {
		_ = c.Status(404).SendString(`{"statusCode":404,"error":"Not Found","message":"no document"}`)
		signer.Finalize(c)
		return nil
	})
	return app
}

// boundAnswer is one exchange with the app: the response with its request and
// the body read.
func boundAnswer(t *testing.T, app *fiber.App, path, nonce string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if nonce != "" {
		req.Header.Set(signing.NonceHeader, nonce)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := app.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Request = req
	return resp, body
}

func TestBindingTiesStatusETagPathAndNonce(t *testing.T) {
	t.Parallel()
	ks := newKeys(t)
	start := time.Unix(1_800_000_000, 0)
	clock := clockpkg.NewFakeClock(start)
	signer := signing.NewSigner(ks, clock)
	app := boundServer(t, signer)
	v := signing.NewVerifier(signing.VerifierOptions{Source: signing.StaticKeySource(ks.PublicSet()), Clock: clock})
	const nonce = "n0nce-0123456789abcdef"

	// The untouched answers verify.
	ok, okBody := boundAnswer(t, app, "/doc", nonce)
	if err := v.VerifyBoundResponse(ok, okBody, nonce); err != nil || ok.StatusCode != 200 {
		t.Fatalf("200: %d %v", ok.StatusCode, err)
	}
	nm, nmBody := boundAnswer(t, app, "/doc", nonce, "If-None-Match", `"file:v3"`)
	if err := v.VerifyBoundResponse(nm, nmBody, nonce); err != nil || nm.StatusCode != 304 || len(nmBody) != 0 {
		t.Fatalf("304: %d %q %v", nm.StatusCode, nmBody, err)
	}
	gone, goneBody := boundAnswer(t, app, "/gone", nonce)
	if err := v.VerifyBoundResponse(gone, goneBody, nonce); err != nil {
		t.Fatalf("404: %v", err)
	}
	// Without a nonce the answer is as the interface describes: no binding.
	plain, _ := boundAnswer(t, app, "/doc", "")
	if plain.Header.Get(signing.BindingHeader) != "" || plain.Header.Get(signing.Header) == "" {
		t.Fatalf("answer without a nonce: %v", plain.Header)
	}
	// A malformed nonce gets no binding either.
	if r, _ := boundAnswer(t, app, "/doc", "short"); r.Header.Get(signing.BindingHeader) != "" {
		t.Fatal("a malformed nonce was bound")
	}

	relabel := func(r *http.Response, status int) *http.Response {
		c := *r
		c.Header = r.Header.Clone()
		c.StatusCode = status
		return &c
	}
	cases := []struct {
		name  string
		resp  *http.Response
		body  []byte
		nonce string
		want  error
	}{
		// The signed 304's body (empty) verifies under X-Service-Signature
		// on any empty answer; the binding says 304.
		{"304 passed on as 404", relabel(nm, 404), nmBody, nonce, signing.ErrStatusMismatch},
		{"304 as 404, binding status edited", func() *http.Response {
			r := relabel(nm, 404)
			b, _ := signing.ParseBinding(r.Header.Get(signing.BindingHeader))
			r.Header.Set(signing.BindingHeader, signing.FormatBinding(b.T, b.KID, 404, b.Sig))
			return r
		}(), nmBody, nonce, signing.ErrBadSignature},
		{"304 confirming another ETag", func() *http.Response {
			r := relabel(nm, 304)
			r.Header.Set("ETag", `"file:v2"`)
			return r
		}(), nmBody, nonce, signing.ErrBadSignature},
		{"200 body passed on as 404", relabel(ok, 404), okBody, nonce, signing.ErrStatusMismatch},
		{"an answer to another request", ok, okBody, "another-nonce-0123456789", signing.ErrBadSignature},
		{"404 of another path", func() *http.Response {
			r := relabel(gone, 404)
			r.Request = httptest.NewRequest(http.MethodGet, "/doc", nil)
			s, _ := signing.ParseHeader(r.Header.Get(signing.Header))
			r.Header.Set(signing.Header, signing.FormatHeader(s.T, s.KID, "/doc", s.Sig)) // the path is not in "<t>.<body>"
			return r
		}(), goneBody, nonce, signing.ErrBadSignature},
		{"binding stripped", func() *http.Response {
			r := relabel(ok, 200)
			r.Header.Del(signing.BindingHeader)
			return r
		}(), okBody, nonce, signing.ErrBindingMissing},
		{"tampered body", ok, bytes.Replace(okBody, []byte(`"v":3`), []byte(`"v":4`), 1), nonce, signing.ErrBadSignature},
	}
	for _, tc := range cases {
		if err := v.VerifyBoundResponse(tc.resp, tc.body, tc.nonce); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}

	// A client that checks X-Service-Signature alone still catches an
	// envelope relabelled.
	if _, err := v.VerifyResponse(relabel(ok, 404), okBody); !errors.Is(err, signing.ErrStatusMismatch) {
		t.Errorf("VerifyResponse, 200 envelope as 404: %v", err)
	}

	// The replay window holds for the binding too: 300 s, not more.
	clock.Set(start.Add(300 * time.Second))
	if err := v.VerifyBoundResponse(ok, okBody, nonce); err != nil {
		t.Fatalf("300 s later: %v", err)
	}
	clock.Set(start.Add(301 * time.Second))
	b := signing.Binding{Status: 200, Method: "GET", Path: "/doc", ETag: `"file:v3"`, Nonce: nonce, Body: okBody}
	if err := v.VerifyBinding(context.Background(), ok.Header.Get(signing.BindingHeader), b); !errors.Is(err, signing.ErrReplayWindow) {
		t.Fatalf("301 s later: %v", err)
	}
}

func TestParseBindingAndNonce(t *testing.T) {
	t.Parallel()
	sig := strings.Repeat("ab", 64)
	good := "t=1800000000,kid=ed25519-x,status=304,sig=" + sig
	b, err := signing.ParseBinding(good)
	if err != nil || b.T != 1_800_000_000 || b.KID != "ed25519-x" || b.Status != 304 || len(b.Sig) != 64 {
		t.Fatalf("%+v %v", b, err)
	}
	for _, bad := range []string{
		"t=1800000000,kid=ed25519-x,status=3040,sig=" + sig,
		"t=1800000000,kid=ed25519-x,status=099,sig=" + sig,
		"t=1800000000,kid=,status=304,sig=" + sig,
		"t=-1,kid=k,status=304,sig=" + sig,
		"t=1800000000,kid=k,status=304,sig=" + sig[2:],
		"t=1800000000,kid=k,status=304,path=/x,sig=" + sig,
		"kid=k,t=1,status=304,sig=" + sig,
	} {
		if _, err := signing.ParseBinding(bad); !errors.Is(err, signing.ErrBindingMalformed) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := signing.ParseBinding(""); !errors.Is(err, signing.ErrBindingMissing) {
		t.Errorf("empty: %v", err)
	}
	for n, want := range map[string]bool{"0123456789abcdef": true, "0123456789abcde": false,
		strings.Repeat("a", 128): true, strings.Repeat("a", 129): false, "0123456789abcdef,": false, "0123456789 abcdef": false} {
		if signing.ValidNonce(n) != want {
			t.Errorf("ValidNonce(%q) = %v", n, !want)
		}
	}
	if err := signing.CheckEnvelopeStatus(404, []byte(`{"statusCode":200}`)); !errors.Is(err, signing.ErrStatusMismatch) {
		t.Errorf("envelope 200 as 404: %v", err)
	}
	if err := signing.CheckEnvelopeStatus(304, nil); err != nil {
		t.Errorf("empty body: %v", err)
	}
}
