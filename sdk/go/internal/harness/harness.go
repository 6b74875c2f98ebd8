// Package harness starts the real deckhand binaries for the SDKs' tests:
// deckhand-control (with a bootstrap admin) and a deckhand agent, from
// $DECKHAND_BIN (what `make build` wrote), or built from the repository
// this module sits in when DECKHAND_BIN is unset.
package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Bootstrap admin of every control plane the harness starts, and the
// password of the users it makes.
const (
	AdminEmail = "root@example.com"
	AdminPass  = "Admin-pass-123"
	UserPass   = "Correct-Horse-9battery"
)

// RepoRoot is the deckhand repository this module sits in ("" when it
// was fetched on its own).
func RepoRoot() string {
	root, err := filepath.Abs(".")
	if err != nil {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(root, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module deckhand\n")) {
			return root
		}
		parent := filepath.Dir(root)
		if parent == root {
			return ""
		}
		root = parent
	}
}

// Bin is the directory holding deckhand and deckhand-control: $DECKHAND_BIN,
// else a build of the repository two directories up into dir.
func Bin(dir string) (string, error) {
	if d := os.Getenv("DECKHAND_BIN"); d != "" {
		return d, nil
	}
	root := RepoRoot()
	if root == "" {
		return "", fmt.Errorf("DECKHAND_BIN is unset and no deckhand repository is above this module")
	}
	for name, pkg := range map[string]string{"deckhand": "./agent/cmd/deckhand", "deckhand-control": "./control/cmd/deckhand-control"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build %s: %v\n%s", name, err, out)
		}
	}
	return dir, nil
}

// Proc is a started binary.
type Proc struct {
	cmd  *exec.Cmd
	out  *syncBuf
	done chan struct{}
	once sync.Once
}

// Stop ends it with SIGTERM (SIGKILL to its group after 15 s) and waits.
func (p *Proc) Stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
}

// Output is what it printed so far.
func (p *Proc) Output() string { return p.out.String() }

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(bin string, env []string, args ...string) (*Proc, io.Reader, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncBuf{}
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(out, pw)
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	p := &Proc{cmd: cmd, out: out, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); pw.Close(); close(p.done) }()
	return p, pr, nil
}

var listening = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// Control is a running deckhand-control.
type Control struct {
	*Proc
	URL  string
	Data string

	mu    sync.Mutex
	admin string // the admin's session, made once: logins are rate-limited per IP
}

// StartControl runs `deckhand-control serve` on data with the bootstrap
// admin (and flags) and waits until it says where it listens.
func StartControl(bin, data string, flags ...string) (*Control, error) {
	p, stdout, err := start(filepath.Join(bin, "deckhand-control"), []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data},
		append([]string{"serve", "--listen", "127.0.0.1:0", "--data", data, "--admin-email", AdminEmail, "--admin-password", AdminPass,
			"--log-level", "warn"}, flags...)...)
	if err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case u, ok := <-found:
		if ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return &Control{Proc: p, URL: u, Data: data}, nil
		}
	case <-time.After(60 * time.Second):
	}
	p.Stop()
	return nil, fmt.Errorf("deckhand-control did not start:\n%s", p.Output())
}

// call is one unsigned-checked JSON call of the harness's own setup.
func call(method, u, token string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %d %s", method, u, resp.StatusCode, raw)
	}
	var env struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(raw, &env)
	return env.Data, nil
}

// Login answers email's session token.
func (c *Control) Login(email, pw string) (string, error) {
	d, err := call("POST", c.URL+"/api/v1/users/auth/login", "", map[string]any{"email": email, "password": pw})
	if err != nil {
		return "", err
	}
	tok, _ := d["token"].(string)
	return tok, nil
}

// User creates a verified user (password UserPass) through the admin API,
// credits its wallet with credit (a decimal string, "" for none) and
// answers its id.
func (c *Control) User(email, credit string) (string, error) {
	admin, err := c.adminToken()
	if err != nil {
		return "", err
	}
	d, err := call("POST", c.URL+"/api/v1/admin/users", admin, map[string]any{"email": email, "password": UserPass, "verified": true})
	if err != nil {
		return "", err
	}
	id, _ := d["id"].(string)
	if credit != "" {
		if _, err := call("POST", c.URL+"/api/v1/admin/wallet/credit", admin, map[string]any{"user_id": id, "amount": credit, "reason": "sdk test"}); err != nil {
			return "", err
		}
	}
	return id, nil
}

// RotateKeys rotates the control plane's signing key (`deckhand-control
// keys rotate`) and has the server reload it (SIGHUP).
func (c *Control) RotateKeys(bin string) error {
	out, err := exec.Command(filepath.Join(bin, "deckhand-control"), "keys", "rotate", "--data", c.Data).CombinedOutput()
	if err != nil {
		return fmt.Errorf("keys rotate: %v\n%s", err, out)
	}
	return c.cmd.Process.Signal(syscall.SIGHUP)
}

// Agent is a running deckhand agent.
type Agent struct {
	*Proc
	URL  string // the gateway
	Data string
}

// StartAgent runs `deckhand run` on data (its file root data/files) and
// waits until every service it lists answers its health. display names
// the X display ("" for none).
func StartAgent(bin, data, display string) (*Agent, error) {
	if err := os.MkdirAll(filepath.Join(data, "files"), 0o755); err != nil {
		return nil, err
	}
	for try := 0; ; try++ {
		base := freeBase(64)
		env := append(os.Environ(), "DISPLAY="+display)
		p, stdout, err := start(filepath.Join(bin, "deckhand"), env, "run", "--data", data,
			"--listen", "127.0.0.1:"+strconv.Itoa(base), "--port-base", strconv.Itoa(base),
			"--crontab", filepath.Join(data, "crontab"), "--files-root", filepath.Join(data, "files"), "--log-level", "warn")
		if err != nil {
			return nil, err
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		a := &Agent{Proc: p, URL: "http://127.0.0.1:" + strconv.Itoa(base), Data: data}
		need := []string{"process", "files", "terminal"}
		if display != "" {
			need = append(need, "display")
		}
		if err = a.wait(need); err == nil {
			return a, nil
		}
		p.Stop()
		if try == 2 {
			return nil, err
		}
	}
}

// Services lists the agent's services (from /_agent/status).
func (a *Agent) Services() ([]string, error) {
	resp, err := http.Get(a.URL + "/_agent/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st struct {
		Services []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"services"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	var names []string
	for _, s := range st.Services {
		names = append(names, s.Name)
	}
	return names, nil
}

func (a *Agent) wait(need []string) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-a.done:
			return fmt.Errorf("the agent exited:\n%s", a.Output())
		default:
		}
		if names, err := a.Services(); err == nil && len(names) > 0 {
			ok := true
			for _, n := range need {
				resp, err := http.Get(a.URL + "/_/" + n + "/health")
				if err != nil {
					ok = false
					break
				}
				resp.Body.Close()
				ok = ok && resp.StatusCode == 200
			}
			if ok {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the agent never answered:\n%s", a.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeBase picks a port range of span ports none of which is bound now.
func freeBase(span int) int {
	for {
		base := 20000 + rand.IntN(40000)
		ok := true
		for p := base; p < base+span && ok; p++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				continue
			}
			ln.Close()
		}
		if ok {
			return base
		}
	}
}

// StartXvfb starts a virtual X server on a free display when Xvfb is
// installed and deckhand-display is in bin (the display service needs
// it); it answers the display's name, or "" and no Proc when either is
// missing.
func StartXvfb(bin string) (*Proc, string, error) {
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		return nil, "", nil
	}
	if _, err := os.Stat(filepath.Join(bin, "deckhand-display")); err != nil {
		return nil, "", nil
	}
	for try := 0; try < 100; try++ {
		n := 300 + rand.IntN(600)
		sock := "/tmp/.X11-unix/X" + strconv.Itoa(n)
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			continue
		}
		p, stdout, err := start(xvfb, os.Environ(), ":"+strconv.Itoa(n), "-screen", "0", "800x600x24", "-nolisten", "tcp")
		if err != nil {
			return nil, "", err
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			select {
			case <-p.done:
				deadline = time.Time{} // it exited (display taken): try another
			default:
			}
			if _, err := os.Stat(sock); err == nil {
				return p, ":" + strconv.Itoa(n), nil
			}
		}
		p.Stop()
	}
	return nil, "", fmt.Errorf("Xvfb did not start")
}
