package deckhand_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	deckhand "github.com/deckhand-dev/deckhand/sdk/go"
	apicontrol "github.com/deckhand-dev/deckhand/sdk/go/api/control"
	"github.com/deckhand-dev/deckhand/sdk/go/internal/harness"
)

// BenchmarkMe is the per-call cost of a signed GET /api/v1/users/auth/me
// by three clients of the same server: raw net/http (one kept-alive
// connection, body read, nothing checked), raw+verify (what a careful raw
// client does, the SDK's work by hand: a fresh nonce, the signature and
// the binding verified, the envelope's status checked, the user decoded
// into the same type) and the SDK's Client.Me. They run interleaved: each
// round makes meBatch calls with each client, in an order that turns
// round by round, so load on the machine falls on all three alike; the
// metrics are the medians over the rounds of the time per call, and
// sdk/verify, the SDK's cost over the careful raw client's (the target is
// at most 1.10). b.N is the calls per client.
func BenchmarkMe(b *testing.B) {
	c := signedIn(b, strconv.FormatInt(time.Now().UnixNano(), 36)+"-bench-go@example.com", "")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	pub := controlKey(b)
	u := control.URL + "/api/v1/users/auth/me"
	ctx := context.Background()
	raw := func(check bool) error {
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
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		if !check {
			return nil
		}
		var env struct {
			StatusCode int             `json:"statusCode"`
			Data       apicontrol.User `json:"data"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.StatusCode != resp.StatusCode || env.Data.Id == nil {
			return fmt.Errorf("envelope: %v %d", err, env.StatusCode)
		}
		h := resp.Header.Get("X-Service-Signature")
		i := strings.LastIndex(h, ",sig=")
		t := h[2:strings.Index(h, ",")]
		sig, _ := hex.DecodeString(h[i+5:])
		if !ed25519.Verify(pub, append([]byte(t+"."), body...), sig) {
			return errors.New("bad signature")
		}
		bh := strings.Split(resp.Header.Get("X-Service-Binding"), ",")
		sum := sha256.Sum256(body)
		data := strings.Join([]string{"deckhand-binding-v1", bh[0][2:], "200", "GET", "/api/v1/users/auth/me", "", nonce,
			hex.EncodeToString(sum[:])}, "\n")
		bsig, _ := hex.DecodeString(bh[3][4:])
		if !ed25519.Verify(pub, []byte(data), bsig) {
			return errors.New("bad binding")
		}
		return nil
	}
	clients := []struct {
		name string
		call func() error
	}{
		{"raw", func() error { return raw(false) }},
		{"verify", func() error { return raw(true) }},
		{"sdk", func() error { _, err := c.Me(ctx); return err }},
	}
	// Warm each client's connection and the SDK's key set.
	for _, cl := range clients {
		if err := cl.call(); err != nil {
			b.Fatal(cl.name, err)
		}
	}
	wall := make([][]float64, len(clients))
	cpu := make([][]float64, len(clients))
	b.ResetTimer()
	for done := 0; done < b.N; done += meBatch {
		n := min(meBatch, b.N-done)
		round := done / meBatch
		for k := range clients {
			i := (k + round) % len(clients)
			cpu0, start := cpuTime(), time.Now()
			for range n {
				if err := clients[i].call(); err != nil {
					b.Fatal(clients[i].name, err)
				}
			}
			wall[i] = append(wall[i], float64(time.Since(start).Microseconds())/float64(n))
			cpu[i] = append(cpu[i], float64((cpuTime()-cpu0).Microseconds())/float64(n))
		}
	}
	b.StopTimer()
	w, onCPU := make([]float64, len(clients)), make([]float64, len(clients))
	for i, cl := range clients {
		w[i], onCPU[i] = median(wall[i]), median(cpu[i])
		b.ReportMetric(w[i], cl.name+"-µs/call")
		b.ReportMetric(onCPU[i], cl.name+"-cpu-µs/call")
	}
	b.ReportMetric(w[2]/w[1], "sdk/verify")
	b.ReportMetric(0, "ns/op")
	if len(wall[0]) >= 3 {
		b.Logf("%d rounds of %d calls each, medians per call: wall raw %.0f µs, raw+verify %.0f µs, sdk %.0f µs: "+
			"sdk/raw+verify %.3f; this process's CPU raw %.0f µs, raw+verify %.0f µs, sdk %.0f µs",
			len(wall[0]), meBatch, w[0], w[1], w[2], w[2]/w[1], onCPU[0], onCPU[1], onCPU[2])
	}
}

// cpuTime is the CPU this process has used (user and system): the
// clients' own work, the server being another process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// meBatch is the calls each client makes in one round of BenchmarkMe:
// long enough to time, short enough that a burst of load elsewhere lands
// in a few rounds of each client rather than in one client's only run.
const meBatch = 25

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
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
