// Package e2e drives the real deckhand-control binary over HTTP: discovery
// endpoints, error envelopes, body limits, configuration precedence, key
// rotation across restarts and the data-directory lock. Every signed
// response it receives is verified twice, with crypto/ed25519 through
// platform/signing's Verifier and with the openssl CLI.
package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"deckhand/platform/platformtest"
	"deckhand/platform/signing"
)

var binary string

// TestMain uses $DECKHAND_BIN/deckhand-control when `make test` built it,
// else builds the binary into a temporary directory.
func TestMain(m *testing.M) {
	platformtest.Main(m, &binary, "deckhand-control", "deckhand/control/cmd/deckhand-control")
}

// proc is one running `deckhand-control serve`.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	data   string
	stdout *platformtest.SyncBuffer
	stderr *platformtest.SyncBuffer
	done   chan error
	once   sync.Once
	// signed is false when the process runs with signing off.
	signed bool
	v      *signing.Verifier
}

// baseEnv keeps DECKHAND_* variables of the test runner away from the child.
func baseEnv(data string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}
}

// serve starts the binary on a free port with --data data.
func serve(t *testing.T, data string, env []string, args ...string) *proc {
	t.Helper()
	full := append([]string{"serve", "--data", data, "--log-level", "warn"}, args...)
	if !hasListen(args, env) {
		full = append(full, "--listen", "127.0.0.1:0")
	}
	cmd := exec.Command(binary, full...)
	cmd.Env = append(baseEnv(data), env...)
	p := &proc{t: t, cmd: cmd, data: data, stdout: &platformtest.SyncBuffer{}, stderr: &platformtest.SyncBuffer{}, done: make(chan error, 1), signed: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := platformtest.WatchListening(out, p.stdout, func() { p.done <- cmd.Wait() })
	t.Cleanup(p.stop)
	select {
	case p.url = <-found:
	case err := <-p.done:
		p.done <- err
		t.Fatalf("deckhand-control exited before listening (%v):\n%s%s", err, p.stdout, p.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("deckhand-control did not start:\n%s", p.stderr)
	}
	p.v = signing.NewVerifier(signing.VerifierOptions{Source: signing.HTTPKeySource(nil, p.url)})
	return p
}

func hasListen(args, env []string) bool {
	for _, a := range args {
		if a == "--listen" || strings.HasPrefix(a, "--listen=") {
			return true
		}
	}
	for _, e := range env {
		if strings.HasPrefix(e, "DECKHAND_LISTEN=") {
			return true
		}
	}
	return false
}

// stop sends SIGTERM and expects a clean exit.
func (p *proc) stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-p.done:
			if err != nil {
				p.t.Errorf("deckhand-control exited with %v:\n%s", err, p.stderr)
			}
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			p.t.Errorf("deckhand-control ignored SIGTERM for 15 s")
		}
	})
}

// reply is one received response, already verified.
type reply struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
	path   string
}

func (r reply) data() map[string]any { d, _ := r.body["data"].(map[string]any); return d }

// do sends a request and verifies the response signature twice (or checks
// there is none when signing is off).
func (p *proc) do(method, path string, body []byte, hdr ...string) reply {
	p.t.Helper()
	req, err := http.NewRequest(method, p.url+path, bytes.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw, path: req.URL.EscapedPath()}
	_ = json.Unmarshal(raw, &r.body)
	p.check(r)
	return r
}

// check verifies r's signature with the Verifier and with openssl.
func (p *proc) check(r reply) {
	p.t.Helper()
	h := r.header.Get(signing.Header)
	if !p.signed {
		if h != "" {
			p.t.Fatalf("%s: signed although signing is off: %q", r.path, h)
		}
		return
	}
	s, err := p.v.Verify(context.Background(), h, r.path, r.raw)
	if err != nil {
		p.t.Fatalf("%s (%d): ed25519 verification: %v\nheader %q\nbody %s", r.path, r.status, err, h, r.raw)
	}
	pub := p.publicKey(s.KID)
	if !opensslVerify(p.t, pub, signing.SignedData(s.T, r.raw), s.Sig) {
		p.t.Fatalf("%s (%d): openssl rejects a signature crypto/ed25519 accepted", r.path, r.status)
	}
}

var (
	keyMu    sync.Mutex
	keyCache = map[string]ed25519.PublicKey{}
)

// publicKey finds kid in the server's published set (fetched without the
// verifier so openssl gets the key from the wire, not from our cache).
func (p *proc) publicKey(kid string) ed25519.PublicKey {
	p.t.Helper()
	keyMu.Lock()
	defer keyMu.Unlock()
	if k, ok := keyCache[kid]; ok {
		return k
	}
	set, err := signing.HTTPKeySource(nil, p.url)(context.Background())
	if err != nil {
		p.t.Fatal(err)
	}
	for _, k := range set.Keys {
		raw, err := k.Decode()
		if err != nil {
			p.t.Fatal(err)
		}
		keyCache[k.KID] = raw
	}
	k, ok := keyCache[kid]
	if !ok {
		p.t.Fatalf("kid %q not in the published set", kid)
	}
	return k
}

// ed25519SPKIPrefix is the DER SubjectPublicKeyInfo header of an Ed25519
// key (RFC 8410): SEQUENCE { SEQUENCE { OID 1.3.101.112 } BIT STRING }.
var ed25519SPKIPrefix = []byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}

// opensslVerify asks `openssl pkeyutl` whether sig is pub's signature of msg.
func opensslVerify(t *testing.T, pub ed25519.PublicKey, msg, sig []byte) bool {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("the openssl CLI is needed as the independent verifier (apt-get install openssl)")
	}
	dir := t.TempDir()
	der := append(append([]byte{}, ed25519SPKIPrefix...), pub...)
	files := map[string][]byte{
		"pub.pem": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}),
		"msg":     msg,
		"sig":     sig,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin", "-in", "msg", "-sigfile", "sig")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil && strings.Contains(string(out), "Signature Verified Successfully"):
		return true
	case errors.As(err, &exit) && strings.Contains(string(out), "Signature Verification Failure"):
		return false
	}
	t.Fatalf("openssl pkeyutl failed to run: %v\n%s", err, out)
	return false
}

// run runs the binary to completion (keys rotate, version, failing serve).
func run(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(baseEnv(t.TempDir()), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not finish: %s", args, e.String())
	}
	return o.String(), e.String(), err
}

// oversized announces a body over the 4 MiB limit on a raw connection and
// reads the answer without sending the body (a client that kept writing
// would see the connection closed instead of the 413).
func (p *proc) oversized(path string) reply {
	p.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
	if err != nil {
		p.t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"email\":\"", path, 5<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		p.t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: raw, path: path}
	_ = json.Unmarshal(raw, &r.body)
	p.check(r)
	return r
}
