package deckhand_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	"github.com/deckhand-dev/deckhand/sdk/go/internal/harness"
)

// BenchmarkMe is the per-call cost of a signed GET /api/v1/users/auth/me:
// raw net/http (one kept-alive connection, body read, no check), raw with
// the user decoded and the answer checked by hand as the SDK checks it
// (the signature, the binding to a fresh nonce, the envelope's status:
// what a careful raw client does), and the SDK's Client.Me (check +
// decode). Same server, same run, sub-benchmarks in turn.
func BenchmarkMe(b *testing.B) {
	c := signedIn(b, strconv.FormatInt(time.Now().UnixNano(), 36)+"-bench-go@example.com", "")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	pub := controlKey(b)
	u := control.URL + "/api/v1/users/auth/me"
	raw := func(b *testing.B, check bool) {
		for b.Loop() {
			req, _ := http.NewRequest("GET", u, nil)
			req.Header.Set("Authorization", "Bearer "+c.Token())
			nonce := ""
			if check {
				n := make([]byte, 18)
				_, _ = rand.Read(n)
				nonce = base64.RawURLEncoding.EncodeToString(n)
				req.Header.Set("X-Service-Nonce", nonce)
			}
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("%d %s", resp.StatusCode, body)
			}
			if check {
				var env struct {
					StatusCode int `json:"statusCode"`
					Data       struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				if err := json.Unmarshal(body, &env); err != nil || env.StatusCode != resp.StatusCode {
					b.Fatal(err, env.StatusCode)
				}
				h := resp.Header.Get("X-Service-Signature")
				i := strings.LastIndex(h, ",sig=")
				t := h[2:strings.Index(h, ",")]
				sig, _ := hex.DecodeString(h[i+5:])
				if !ed25519.Verify(pub, append([]byte(t+"."), body...), sig) {
					b.Fatal("bad signature")
				}
				bh := strings.Split(resp.Header.Get("X-Service-Binding"), ",")
				sum := sha256.Sum256(body)
				data := strings.Join([]string{"deckhand-binding-v1", bh[0][2:], "200", "GET", "/api/v1/users/auth/me", "", nonce,
					hex.EncodeToString(sum[:])}, "\n")
				bsig, _ := hex.DecodeString(bh[3][4:])
				if !ed25519.Verify(pub, []byte(data), bsig) {
					b.Fatal("bad binding")
				}
			}
		}
	}
	b.Run("raw", func(b *testing.B) { raw(b, false) })
	b.Run("raw+verify", func(b *testing.B) { raw(b, true) })
	b.Run("sdk", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if _, err := c.Me(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func controlKey(b *testing.B) ed25519.PublicKey {
	resp, err := http.Get(control.URL + deckhand.PublicKeyPath)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		Data struct {
			Keys []struct {
				Hex string `json:"public_key_hex"`
			} `json:"keys"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		b.Fatal(err)
	}
	k, _ := hex.DecodeString(env.Data.Keys[0].Hex)
	return k
}

// benchScript runs one language's benchmark script once (it times its own
// calls, raw and SDK interleaved in rounds) and reports its medians.
func benchScript(b *testing.B, email string, name string, args ...string) {
	root := harness.RepoRoot()
	if root == "" {
		b.Skip("not inside the deckhand repository")
	}
	email = strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + email // b.N probes run this again
	if _, err := control.User(email, ""); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = filepath.Join(root, "sdk")
	cmd.Env = append(os.Environ(), "DECKHAND_CONTROL_URL="+control.URL, "DECKHAND_EMAIL="+email, "DECKHAND_PASSWORD="+harness.UserPass)
	b.ResetTimer()
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	// The script prints "raw <µs>" and "sdk <µs>" lines (medians per call).
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				b.ReportMetric(v, f[0]+"-µs/call")
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMePython: sdk/python/bench.py (http.client raw against
// Client.me, same connection reuse).
func BenchmarkMePython(b *testing.B) {
	benchScript(b, "bench-py@example.com", python(b), "python/bench.py")
}

// BenchmarkMeTypeScript: sdk/ts/bench.mjs (fetch raw against
// DeckhandClient.me); needs the built SDK (tsc).
func BenchmarkMeTypeScript(b *testing.B) {
	benchScript(b, "bench-ts@example.com", "node", "ts/bench.mjs")
}
