// Package e2e drives the real binaries: `deckhand service tunnel` and the
// `deckhand tunnel` client, with OpenSSH's sshd and ssh on each side.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"deckhand/platform/platformtest"
	"deckhand/platform/proc"
)

var deckhand string

func TestMain(m *testing.M) {
	platformtest.Main(m, &deckhand, "deckhand", "deckhand/agent/cmd/deckhand")
}

// sshd starts OpenSSH's server on a loopback port with a fresh host key
// and one authorized user key; it returns the port and the key to log in with.
func sshd(t *testing.T) (port int, key string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sshd needs root (privilege separation)")
	}
	bin, err := exec.LookPath("sshd")
	if err != nil {
		bin = "/usr/sbin/sshd"
		if _, err := os.Stat(bin); err != nil {
			t.Fatal("sshd is not installed (Debian openssh-server; scripts/setup.sh installs it)")
		}
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"host", "user"} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput()
		if err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "user.pub"))
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll("/run/sshd", 0o755) // privilege separation directory
	// HOME is the temporary directory so the login shell reads no
	// ~/.bashrc of whoever set up the machine (a pyenv init can hang).
	port = platformtest.FreePortBase(t, 1)
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s/host
PidFile %s/sshd.pid
AuthorizedKeysFile %s/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
StrictModes no
LogLevel ERROR
SetEnv HOME=%s
`, port, dir, dir, dir, dir)
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	var logs platformtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = proc.KillGroup(cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	waitPort(t, port, func() string { return logs.String() })
	return port, filepath.Join(dir, "user")
}

func waitPort(t *testing.T, port int, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %d: %s", port, logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// service runs `deckhand service tunnel` on addr; stop kills it.
func service(t *testing.T, addr, data string) (stop func()) {
	stop, _ = serviceProc(t, addr, data)
	return stop
}

func serviceProc(t *testing.T, addr, data string) (stop func(), pid int) {
	t.Helper()
	base := platformtest.FreePortBase(t, 15)
	cmd := exec.Command(deckhand, "service", "tunnel", "--listen", addr, "--data", data, "--port-base", strconv.Itoa(base))
	cmd.Env = append(os.Environ(), "DECKHAND_TUNNEL_PING_INTERVAL=2s")
	var logs platformtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = io.Discard, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan struct{})
	go func() {
		for i := 0; i < 1500; i++ {
			if resp, err := http.Get("http://" + addr + "/health"); err == nil {
				resp.Body.Close()
				close(found)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		_ = cmd.Process.Kill()
		<-done
	}
	t.Cleanup(stop)
	select {
	case <-found:
	case <-done:
		t.Fatalf("the service exited: %s", logs.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("the service did not start: %s", logs.String())
	}
	return stop, cmd.Process.Pid
}

var clientListening = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

// client runs `deckhand tunnel` and returns the local address it forwards.
func client(t *testing.T, args ...string) string {
	t.Helper()
	return clientEnv(t, nil, args...)
}

// clientEnv is client with env added to the command's environment.
func clientEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(deckhand, append([]string{"tunnel", "--local", "127.0.0.1:0", "--ping-interval", "2s"}, args...)...)
	cmd.Env = append(append(os.Environ(), "DECKHAND_TOKEN=s3cret-token"), env...)
	out, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs platformtest.SyncBuffer
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := clientListening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("client log:\n%s", logs.String())
		}
	})
	select {
	case a := <-addr:
		return a
	case <-time.After(15 * time.Second):
		t.Fatalf("the client did not listen: %s", logs.String())
	}
	return ""
}

func sshCmd(ctx context.Context, key, addr string, command string) *exec.Cmd {
	host, port, _ := net.SplitHostPort(addr)
	return exec.CommandContext(ctx, "ssh", "-F", "/dev/null", "-p", port, "-i", key,
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
		"-o", "LogLevel=ERROR", "-o", "ConnectTimeout=20", "root@"+host, command)
}

// gatekeeper stands in for the platform proxy's permission check: it
// forwards to the service only requests carrying the token both as
// Authorization: Bearer and as the deckhand_token cookie.
func gatekeeper(t *testing.T, service string) string {
	t.Helper()
	target, _ := url.Parse(service)
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("deckhand_token")
		if r.Header.Get("Authorization") != "Bearer s3cret-token" || err != nil || c.Value != "s3cret-token" {
			http.Error(w, `{"code":"UNAUTHORIZED","message":"token required"}`, http.StatusUnauthorized)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestSSHThroughTheTunnel logs in with the real ssh client through
// `deckhand tunnel` (behind a gatekeeper that checks the token on the
// upgrade), pushes 1 MiB through `cat` (ssh half-closes at end of input),
// survives a restart of the service, and is cut by DELETE.
func TestSSHThroughTheTunnel(t *testing.T) {
	sshPort, key := sshd(t)
	svcAddr := "127.0.0.1:" + strconv.Itoa(platformtest.FreePortBase(t, 1))
	data := t.TempDir()
	stop := service(t, svcAddr, data)
	local := client(t, "--url", gatekeeper(t, "http://"+svcAddr), "--remote", strconv.Itoa(sshPort))

	payload := make([]byte, 1<<20)
	_, _ = rand.Read(payload)
	run := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := sshCmd(ctx, key, local, "echo hello-from-sshd; cat")
		cmd.Stdin = bytes.NewReader(payload)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ssh: %v: %s", err, stderr.String())
		}
		want := append([]byte("hello-from-sshd\n"), payload...)
		if !bytes.Equal(out, want) {
			t.Fatalf("ssh output: %d bytes, want %d", len(out), len(want))
		}
	}
	run()

	// Restart the service: the client keeps listening and the next
	// connection waits for the service to come back.
	stop()
	result := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := sshCmd(ctx, key, local, "echo again").CombinedOutput()
		if err == nil && string(out) != "again\n" {
			err = fmt.Errorf("output %q", out)
		}
		result <- err
	}()
	time.Sleep(700 * time.Millisecond)
	service(t, svcAddr, data)
	if err := <-result; err != nil {
		t.Fatalf("ssh after the restart: %v", err)
	}

	// A long session, cut by DELETE: ssh sees its connection closed.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	long := sshCmd(ctx, key, local, "echo started; sleep 60")
	stdout, _ := long.StdoutPipe()
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "started\n" {
		t.Fatalf("long session printed %q", line)
	}
	var list struct {
		Sessions []struct {
			ID   string `json:"id"`
			Port int    `json:"port"`
		} `json:"sessions"`
	}
	resp, err := http.Get("http://" + svcAddr + "/api/v1/tunnel/sessions")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Sessions) != 1 || list.Sessions[0].Port != sshPort {
		t.Fatalf("sessions %+v", list)
	}
	req, _ := http.NewRequest("DELETE", "http://"+svcAddr+"/api/v1/tunnel/sessions/"+list.Sessions[0].ID, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("delete: %v %v", err, resp)
	}
	resp.Body.Close()
	begin := time.Now()
	err = long.Wait()
	if err == nil || time.Since(begin) > 20*time.Second {
		t.Fatalf("ssh after the cut: %v after %v, want a closed connection at once", err, time.Since(begin))
	}
}

// TestClientRefusals: a closed port ends the local connection at once
// (the client logs the service's 502), and a bad flag names itself.
func TestClientRefusals(t *testing.T) {
	svcAddr := "127.0.0.1:" + strconv.Itoa(platformtest.FreePortBase(t, 1))
	service(t, svcAddr, t.TempDir())
	local := client(t, "--url", "http://"+svcAddr, "--remote", strconv.Itoa(platformtest.FreePortBase(t, 1)))
	c, err := net.Dial("tcp", local)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err != io.EOF {
		t.Fatalf("read %d %v, want EOF", n, err)
	}
	c.Close()
	out, err := exec.Command(deckhand, "tunnel", "--url", "http://"+svcAddr, "--remote", "70000").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--remote") {
		t.Fatalf("--remote 70000: %v %s", err, out)
	}
}

// TestDeadLinkIsFound freezes the service (as a laptop's sleep or a dead
// network freezes the far end): the client's pings go unanswered, it
// closes the local connection within two intervals, and once the service
// thaws the next connection works.
func TestDeadLinkIsFound(t *testing.T) {
	echoPort := platformtest.FreePortBase(t, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(echoPort))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	svcAddr := "127.0.0.1:" + strconv.Itoa(platformtest.FreePortBase(t, 1))
	_, pid := serviceProc(t, svcAddr, t.TempDir())
	local := client(t, "--url", "http://"+svcAddr, "--remote", strconv.Itoa(echoPort))
	echo := func(c net.Conn) error {
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.ReadFull(c, buf)
		return err
	}
	c, err := net.Dial("tcp", local)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := echo(c); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	defer func() {
		if !thawed {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}()
	begin := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || err != io.EOF {
		t.Fatalf("read on a dead link: %d %v, want the client to close it", n, err)
	}
	t.Logf("dead link closed after %v (ping interval 2s)", time.Since(begin).Round(time.Millisecond))
	_ = syscall.Kill(pid, syscall.SIGCONT)
	thawed = true
	c2, err := net.Dial("tcp", local)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := echo(c2); err != nil {
		t.Fatalf("after the thaw: %v", err)
	}
}

// TestThroughTheGateway runs the whole agent (`deckhand run --services
// tunnel`) and forwards through the gateway's /_/tunnel/ path, the way a
// user outside the container reaches it; the proxy answers there too.
func TestThroughTheGateway(t *testing.T) {
	echoSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "app %s prefix=%s", r.URL.Path, r.Header.Get("X-Forwarded-Prefix"))
	}))
	defer echoSrv.Close()
	appPort := echoSrv.Listener.Addr().(*net.TCPAddr).Port
	base := platformtest.FreePortBase(t, 15)
	gw := "127.0.0.1:" + strconv.Itoa(base)
	cmd := exec.Command(deckhand, "run", "--services", "tunnel", "--isolate", "none", "--listen", gw,
		"--port-base", strconv.Itoa(base), "--data", t.TempDir(), "--log-level", "error")
	var logs platformtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var resp *http.Response
	var err error
	for i := 0; i < 1000; i++ {
		if resp, err = http.Get("http://" + gw + "/_/tunnel/api/v1/tunnel/bindings"); err == nil && resp.StatusCode == 200 {
			break
		}
		if resp != nil {
			resp.Body.Close()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the agent did not serve the tunnel: %v %s", err, logs.String())
	}
	resp.Body.Close()

	// The agent's own ports are denied (its --port-base reached the service).
	resp, err = http.Get("http://" + gw + "/_/tunnel/proxy/" + strconv.Itoa(base+2) + "/")
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("agent port through the proxy: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = http.Get("http://" + gw + "/_/tunnel/proxy/" + strconv.Itoa(appPort) + "/page")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "app /page prefix=/_/tunnel/proxy/" + strconv.Itoa(appPort); string(body) != want {
		t.Fatalf("proxy through the gateway: %q, want %q", body, want)
	}

	// The gateway named by --url's service path, by --agent, and by
	// DECKHAND_AGENT_URL alone, as every agent command takes it.
	for _, via := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--url", "http://" + gw + "/_/tunnel/"}},
		{nil, []string{"--agent", "http://" + gw}},
		{[]string{"DECKHAND_AGENT_URL=http://" + gw}, nil},
	} {
		local := clientEnv(t, via.env, append(via.args, "--remote", strconv.Itoa(appPort))...)
		c, err := net.Dial("tcp", local)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /raw HTTP/1.0\r\nHost: x\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		all, err := io.ReadAll(c)
		c.Close()
		if err != nil || !strings.HasSuffix(string(all), "app /raw prefix=") {
			t.Fatalf("HTTP/1.0 through the tunnel (%v %v): %v %q", via.env, via.args, err, all)
		}
	}
}
