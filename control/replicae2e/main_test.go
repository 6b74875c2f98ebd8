package replicae2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"deckhand/control/identity/identitytest"
	"deckhand/platform/platformtest"
	"deckhand/platform/secrets"
)

var binary string

func TestMain(m *testing.M) {
	platformtest.Main(m, &binary, "deckhand-control", "deckhand/control/cmd/deckhand-control")
}

const (
	adminEmail = "root@example.com"
	adminPass  = "Admin-pass-123"
	goodPW     = "Correct-Horse-9battery"
)

// cluster is a database and the master key every replica shares.
type cluster struct {
	t         *testing.T
	dbURL     string
	masterKey string
}

func newCluster(t *testing.T, dbURL string) *cluster {
	t.Helper()
	path := filepath.Join(t.TempDir(), "master.key")
	if err := secrets.WriteKeyFile(path, secrets.NewKey()); err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, dbURL: dbURL, masterKey: path}
}

// replica is one running `serve --database-url`.
type replica struct {
	t      *testing.T
	name   string
	url    string
	data   string
	cmd    *exec.Cmd
	stderr *platformtest.SyncBuffer
	http   *http.Client
	stop   func()
}

// start runs a replica with its own --data (mail only) on the cluster's
// database.
func (c *cluster) start(name string, flags ...string) *replica {
	c.t.Helper()
	return c.startIn(name, c.t.TempDir(), flags...)
}

func (c *cluster) startIn(name, data string, flags ...string) *replica {
	t := c.t
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", data, "--database-url", c.dbURL,
		"--master-key-file", c.masterKey, "--admin-email", adminEmail, "--admin-password", adminPass,
		"--log-level", "warn"}, flags...)
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{t: t, name: name, data: data, cmd: cmd, stderr: &platformtest.SyncBuffer{},
		http: &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
			if t.Failed() {
				t.Logf("replica %s stderr:\n%s", name, r.stderr.String())
			}
		})
	}
	t.Cleanup(r.stop)
	select {
	case u := <-platformtest.WatchListening(stdout, nil, nil):
		r.url = u
	case <-exited:
		t.Fatalf("replica %s exited at start: %s", name, r.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s did not start: %s", name, r.stderr.String())
	}
	return r
}

// kill ends the replica with SIGKILL: no shutdown of any kind.
func (r *replica) kill() {
	_ = r.cmd.Process.Kill()
	r.stop()
}

type resp = identitytest.Resp

func (r *replica) call(method, path string, body any, bearer string, hdrs ...string) resp {
	r.t.Helper()
	return identitytest.Call(r.t, r.http, r.url, method, path, body, bearer, hdrs...)
}

func (r *replica) must(x resp, status int) resp {
	r.t.Helper()
	if x.Status != status {
		r.t.Fatalf("replica %s: status %d, want %d: %s", r.name, x.Status, status, x.Raw)
	}
	return x
}

func data(x resp) map[string]any { d, _ := x.Body["data"].(map[string]any); return d }

func str(x resp, keys ...string) string {
	var cur any = x.Body
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}

// mailToken reads the newest mail the replica wrote to addr.
func (r *replica) mailToken(addr string) string {
	r.t.Helper()
	return identitytest.MailToken(r.t, filepath.Join(r.data, "mail"), addr)
}

func (r *replica) login(email, pw string) map[string]any {
	r.t.Helper()
	return data(r.must(r.call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": pw}, ""), 200))
}

// run runs the binary to completion (keys rotate, migrate).
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// eventually polls f until it returns "" or the time is up.
func eventually(t *testing.T, within time.Duration, f func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postJSON is call without failing the test on a transport error (a
// replica killed mid-request).
func postJSON(r *replica, path string, body any, bearer string) (int, error) {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", r.url+path, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	res, err := r.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}
