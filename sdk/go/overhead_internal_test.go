package deckhand

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deckhand-dev/deckhand/sdk/go/api/control"
)

// signingTransport answers GET /api/v1/users/auth/me in memory, signed and
// bound as the control plane signs: the client's own work, without a
// network or a server's, is all that differs between two clients of it.
type signingTransport struct {
	priv ed25519.PrivateKey
	body []byte
}

func (s signingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t := time.Now().Unix()
	path := req.URL.EscapedPath()
	msg := append(strconv.AppendInt(nil, t, 10), '.')
	sig := ed25519.Sign(s.priv, append(msg, s.body...))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(SignatureHeader, "t="+strconv.FormatInt(t, 10)+",kid=k1,path="+path+",sig="+hex.EncodeToString(sig))
	if nonce := req.Header.Get(NonceHeader); nonce != "" {
		bsig := ed25519.Sign(s.priv, bindingData(t, binding{status: 200, method: req.Method, path: path, nonce: nonce, body: s.body}))
		h.Set(BindingHeader, "t="+strconv.FormatInt(t, 10)+",kid=k1,status=200,sig="+hex.EncodeToString(bsig))
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(s.body)), ContentLength: int64(len(s.body)),
		Request: req}, nil
}

// BenchmarkMeOffline is the client's own cost per call of Client.Me
// against a careful raw client doing the same work (nonce, both
// signatures, the envelope's status, the user decoded), over an in-memory
// transport that signs each answer: what BenchmarkMe measures with the
// network and the server taken out, so the difference is the SDK's alone.
func BenchmarkMeOffline(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	body := []byte(`{"statusCode":200,"message":"ok","data":{"id":"u_0123456789abcdef","email":"bench@example.com",` +
		`"name":"Bench","role":"user","email_verified":true,"totp_enabled":false,"created_at":"2026-11-29T17:00:00Z"}}`)
	hc := &http.Client{Transport: signingTransport{priv: priv, body: body}}
	const base = "http://control.invalid"
	b.Run("raw+verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := rawMe(hc, pub, base+"/api/v1/users/auth/me"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		c, err := New(base, Options{HTTPClient: hc, Token: "tok"})
		if err != nil {
			b.Fatal(err)
		}
		c.v.keys, c.v.fetchedAt = map[string]ed25519.PublicKey{"k1": pub}, time.Now()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Me(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// rawMe is the careful raw client of BenchmarkMeOffline.
func rawMe(hc *http.Client, pub ed25519.PublicKey, u string) error {
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", "Bearer tok")
	n := make([]byte, 18)
	_, _ = rand.Read(n)
	nonce := base64.RawURLEncoding.EncodeToString(n)
	req.Header.Set(NonceHeader, nonce)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var env struct {
		StatusCode int          `json:"statusCode"`
		Data       control.User `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.StatusCode != resp.StatusCode || env.Data.Id == nil {
		return errors.New("envelope")
	}
	h := resp.Header.Get(SignatureHeader)
	i := strings.LastIndex(h, ",sig=")
	t := h[2:strings.Index(h, ",")]
	sig, _ := hex.DecodeString(h[i+5:])
	if !ed25519.Verify(pub, append([]byte(t+"."), body...), sig) {
		return errors.New("bad signature")
	}
	bh := strings.Split(resp.Header.Get(BindingHeader), ",")
	sum := sha256.Sum256(body)
	data := strings.Join([]string{"deckhand-binding-v1", bh[0][2:], "200", "GET", "/api/v1/users/auth/me", "", nonce,
		hex.EncodeToString(sum[:])}, "\n")
	bsig, _ := hex.DecodeString(bh[3][4:])
	if !ed25519.Verify(pub, []byte(data), bsig) {
		return errors.New("bad binding")
	}
	return nil
}
