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
	"testing"
	"time"

	"deckhand/control/controltest"
	"deckhand/control/identity/identitytest"
	"deckhand/platform/secrets"
)

func TestMain(m *testing.M) { controltest.MainOnce(m) }

const (
	adminEmail = controltest.AdminEmail
	adminPass  = controltest.AdminPass
	goodPW     = controltest.GoodPW
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

// replica is one running `serve --database-url` (controltest's process
// harness), named for failure messages.
type replica struct {
	*controltest.Server
	name string
}

// start runs a replica with its own --data (mail only) on the cluster's
// database.
func (c *cluster) start(name string, flags ...string) *replica {
	c.t.Helper()
	return c.startIn(name, c.t.TempDir(), flags...)
}

func (c *cluster) startIn(name, data string, flags ...string) *replica {
	c.t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", data, "--database-url", c.dbURL,
		"--master-key-file", c.masterKey, "--admin-email", adminEmail, "--admin-password", adminPass,
		"--log-level", "warn"}, flags...)
	return &replica{Server: controltest.StartArgs(c.t, data, args...), name: name}
}

// kill ends the replica with SIGKILL: no shutdown of any kind.
func (r *replica) kill() { r.Kill() }

type resp = identitytest.Resp

func (r *replica) call(method, path string, body any, bearer string, hdrs ...string) resp {
	r.T.Helper()
	return r.Call(method, path, body, bearer, hdrs...)
}

func (r *replica) must(x resp, status int) resp {
	r.T.Helper()
	if x.Status != status {
		r.T.Fatalf("replica %s: status %d, want %d: %s", r.name, x.Status, status, x.Raw)
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
	r.T.Helper()
	return identitytest.MailToken(r.T, filepath.Join(r.Data, "mail"), addr)
}

func (r *replica) login(email, pw string) map[string]any {
	r.T.Helper()
	return data(r.must(r.call("POST", "/api/v1/users/auth/login", map[string]any{"email": email, "password": pw}, ""), 200))
}

// run runs the binary to completion (keys rotate, migrate).
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, controltest.Binary(), args...)
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
	req, err := http.NewRequest("POST", r.URL+path, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	res, err := r.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}
