// Command terminal is the terminal service's benchmark (run it through
// scripts/bench/terminal.sh). In one run, side by side and interleaved, it
// measures:
//
//   - output throughput of `cat` of a base64 file: read straight from a local
//     PTY (the limit), through the terminal service's WebSocket, and through
//     `ssh -tt` to a private loopback sshd; first byte to last byte;
//   - keystroke echo round trip (p50/p99) over the WebSocket and over ssh,
//     both into `cat` on a cooked PTY so the kernel echoes each key;
//   - the terminal service's RSS per idle session for N idle shells.
//
// The service runs in its own process (this binary with "serve"), as the
// agent would run it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/gorilla/websocket"

	"deckhand/platform"
	"deckhand/platform/clock"
	"deckhand/platform/contract"
	"deckhand/services/terminal"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "serve" {
		serve(os.Args[2])
		return
	}
	sizeMB := flag.Int("mb", 200, "size of the file cat prints, in MB")
	rounds := flag.Int("rounds", 3, "throughput rounds (each runs every path once)")
	keys := flag.Int("keys", 2000, "keystrokes per echo measurement")
	idle := flag.Int("idle", 200, "idle sessions for the RSS figure")
	noSSH := flag.Bool("no-ssh", false, "skip the ssh comparison")
	flag.Parse()
	if err := run(*sizeMB, *rounds, *keys, *idle, !*noSSH); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// serve runs the terminal service alone on addr until killed.
func serve(addr string) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	set := terminal.DefaultSettings()
	set.IdleTimeout = 0
	svc := terminal.New(contract.ServiceDeps{Name: "terminal", Logger: log, Clock: clock.SystemClock{}}, set)
	host := platform.NewHost(platform.HostConfig{Info: platform.Info{Name: "terminal"}, Logger: log}, svc.Routes())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() {
		ch := make(chan os.Signal, 1)
		signalNotify(ch)
		<-ch
		_ = svc.Close()
		os.Exit(0)
	}()
	fmt.Println("READY")
	_ = host.Serve(ln)
}

type env struct {
	dir    string
	file   string
	size   int64
	url    string
	server *exec.Cmd
	ssh    []string // ssh command prefix, nil without ssh
	sshd   *exec.Cmd
}

func run(sizeMB, rounds, keys, idle int, withSSH bool) error {
	dir, err := os.MkdirTemp("", "terminal-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e := &env{dir: dir, file: filepath.Join(dir, "data.b64")}
	if err := makeFile(e.file, sizeMB); err != nil {
		return err
	}
	st, _ := os.Stat(e.file)
	e.size = st.Size()
	if err := e.startServer(); err != nil {
		return err
	}
	defer e.stopServer()
	if withSSH {
		if err := e.startSSHD(); err != nil {
			return fmt.Errorf("sshd: %w", err)
		}
		defer e.stopSSHD()
	}
	fmt.Printf("# %s, %d CPUs, file %d bytes of base64 text, %d rounds\n", time.Now().UTC().Format(time.RFC3339), numCPU(), e.size, rounds)

	// Throughput, interleaved so machine noise hits every path alike.
	paths := []struct {
		name string
		cmd  string
		fn   func() (float64, error)
	}{
		{"local PTY (creack/pty, 32 KiB reads)", "cat FILE on a PTY, read in-process", e.localPTY},
		{"terminal WebSocket", "GET /api/v1/terminal/ws, shell /bin/sh, `exec cat FILE`", e.websocketCat},
	}
	if withSSH {
		paths = append(paths, struct {
			name string
			cmd  string
			fn   func() (float64, error)
		}{"ssh -tt to loopback sshd", strings.Join(e.ssh, " ") + " cat FILE", e.sshCat})
	}
	results := make([][]float64, len(paths))
	for r := 0; r < rounds; r++ {
		for i, p := range paths {
			mbps, err := p.fn()
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			results[i] = append(results[i], mbps)
		}
	}
	fmt.Println("\n## Output throughput (MB/s, first byte to last, median of rounds)")
	fmt.Println("| path | median MB/s | rounds | vs local PTY |")
	fmt.Println("|---|---|---|---|")
	local := median(results[0])
	for i, p := range paths {
		m := median(results[i])
		fmt.Printf("| %s | %.1f | %s | %.0f%% |\n", p.name, m, fmtList(results[i]), 100*m/local)
	}
	for _, p := range paths {
		fmt.Printf("- %s: %s\n", p.name, p.cmd)
	}

	// Keystroke echo.
	fmt.Println("\n## Keystroke echo round trip (µs), into `cat` on a cooked PTY")
	fmt.Println("| path | p50 | p99 | max | keys |")
	fmt.Println("|---|---|---|---|---|")
	wsLat, err := e.websocketEcho(keys)
	if err != nil {
		return fmt.Errorf("websocket echo: %w", err)
	}
	printLat("terminal WebSocket", wsLat)
	if withSSH {
		sshLat, err := e.sshEcho(keys)
		if err != nil {
			return fmt.Errorf("ssh echo: %w", err)
		}
		printLat("ssh -tt", sshLat)
	}

	// Idle sessions.
	if idle > 0 {
		perSession, shellRSS, err := e.idleRSS(idle)
		if err != nil {
			return fmt.Errorf("idle sessions: %w", err)
		}
		fmt.Printf("\n## %d idle sessions (shell /bin/bash)\n", idle)
		fmt.Printf("- terminal service RSS per session: %.0f KiB (%.2f MiB)\n", perSession/1024, perSession/(1<<20))
		fmt.Printf("- each bash itself (not the service): %.0f KiB RSS median\n", shellRSS/1024)
	}
	return nil
}

func makeFile(path string, sizeMB int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// base64 of pseudo-random bytes in 76-column lines, like `base64 /dev/urandom`.
	cmd := exec.Command("sh", "-c", fmt.Sprintf("head -c %d /dev/urandom | base64", sizeMB*1000*1000*3/4))
	cmd.Stdout = f
	return cmd.Run()
}

func (e *env) startServer() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	e.server = exec.Command("/proc/self/exe", "serve", addr)
	// Shells get an empty home: the machine's ~/.bashrc (pyenv and such)
	// is not what is being measured.
	home := filepath.Join(e.dir, "home")
	_ = os.MkdirAll(home, 0o755)
	e.server.Env = append(os.Environ(), "HOME="+home)
	out, _ := e.server.StdoutPipe()
	e.server.Stderr = os.Stderr
	if err := e.server.Start(); err != nil {
		return err
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "READY" {
		return fmt.Errorf("server did not start: %q", line)
	}
	e.url = "http://" + addr
	return nil
}

func (e *env) stopServer() {
	_ = e.server.Process.Signal(syscall.SIGTERM)
	_ = e.server.Wait()
}

// startSSHD runs a private sshd on a loopback port with its own host and
// user keys in the temp dir; the system's sshd and its config are untouched.
func (e *env) startSSHD() error {
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd = "/usr/sbin/sshd"
	}
	d := filepath.Join(e.dir, "ssh")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	for _, k := range []string{"host", "user"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(d, k)).CombinedOutput(); err != nil {
			return fmt.Errorf("ssh-keygen: %v %s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(d, "user.pub"))
	if err := os.WriteFile(filepath.Join(d, "authorized_keys"), pub, 0o600); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	_ = os.MkdirAll("/run/sshd", 0o755) // privilege separation dir sshd insists on
	// Remote shells get the same empty home as the service's shells.
	_ = os.MkdirAll(filepath.Join(e.dir, "home"), 0o755)
	conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s/host
AuthorizedKeysFile %s/authorized_keys
PidFile %s/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers %s
SetEnv HOME=%s
`, port, d, d, d, currentUser(), filepath.Join(e.dir, "home"))
	cfg := filepath.Join(d, "sshd_config")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return err
	}
	e.sshd = exec.Command(sshd, "-D", "-e", "-f", cfg)
	var logBuf bytes.Buffer
	e.sshd.Stderr = &logBuf
	if err := e.sshd.Start(); err != nil {
		return err
	}
	e.ssh = []string{"ssh", "-tt", "-F", "/dev/null", "-p", strconv.Itoa(port), "-i", filepath.Join(d, "user"),
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-o", "BatchMode=yes", currentUser() + "@127.0.0.1"}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			out, err := exec.Command(e.ssh[0], append(e.ssh[1:], "echo", "ok")...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "ok") {
				return fmt.Errorf("ssh login: %v %s %s", err, out, logBuf.String())
			}
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("sshd did not listen: %s", logBuf.String())
}

func (e *env) stopSSHD() {
	if e.sshd != nil {
		_ = e.sshd.Process.Signal(syscall.SIGTERM)
		_ = e.sshd.Wait()
	}
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	out, _ := exec.Command("id", "-un").Output()
	return strings.TrimSpace(string(out))
}

// meter counts bytes and when the first of them came.
type meter struct {
	n     int64
	first time.Time
}

// readAll reads r through buf until it fails (EOF, or EIO from a PTY whose
// process exited), counting what it read.
func (m *meter) readAll(r io.Reader, buf []byte) {
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if m.n == 0 {
				m.first = time.Now()
			}
			m.n += int64(k)
		}
		if err != nil {
			return
		}
	}
}

// countUntilEOF reads r in 32 KiB chunks; it returns the bytes and the time
// from the first byte to the end.
func countUntilEOF(r io.Reader) (int64, time.Duration) {
	var m meter
	m.readAll(r, make([]byte, 32<<10))
	return m.n, time.Since(m.first)
}

func (e *env) mbps(d time.Duration) float64 { return float64(e.size) / 1e6 / d.Seconds() }

func (e *env) localPTY() (float64, error) {
	cmd := exec.Command("cat", e.file)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		return 0, err
	}
	n, d := countUntilEOF(f) // ends with EIO when cat exits
	f.Close()
	_ = cmd.Wait()
	if n < e.size {
		return 0, fmt.Errorf("local PTY gave %d of %d bytes", n, e.size)
	}
	return e.mbps(d), nil
}

func (e *env) dialWS(query string) (*websocket.Conn, error) {
	d := websocket.Dialer{ReadBufferSize: 64 << 10, WriteBufferSize: 4096}
	c, _, err := d.Dial(strings.Replace(e.url, "http://", "ws://", 1)+"/api/v1/terminal/ws"+query, nil)
	return c, err
}

// waitFor reads binary frames until want has been seen.
func waitFor(c *websocket.Conn, want string) error {
	var seen []byte
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	for !bytes.Contains(seen, []byte(want)) {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return err
		}
		seen = append(seen, msg...)
		if len(seen) > 1<<16 {
			seen = seen[len(seen)-1<<15:]
		}
	}
	return nil
}

func (e *env) websocketCat() (float64, error) {
	c, err := e.dialWS("?shell=/bin/sh&cols=80&rows=24")
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if err := c.WriteMessage(websocket.BinaryMessage, []byte("echo re''ady\n")); err != nil {
		return 0, err
	}
	if err := waitFor(c, "ready"); err != nil {
		return 0, err
	}
	if err := c.WriteMessage(websocket.BinaryMessage, []byte("exec cat "+e.file+"\n")); err != nil {
		return 0, err
	}
	var m meter
	frames := 0
	buf := make([]byte, 64<<10)
	for {
		mt, r, err := c.NextReader()
		if err != nil {
			return 0, err
		}
		if mt == websocket.TextMessage {
			b, _ := io.ReadAll(r)
			if bytes.Contains(b, []byte(`"exit"`)) {
				break
			}
			continue
		}
		frames++
		m.readAll(r, buf)
	}
	n, d := m.n, time.Since(m.first)
	if os.Getenv("BENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "websocket: %d bytes in %d frames\n", n, frames)
	}
	if n < e.size {
		return 0, fmt.Errorf("WebSocket gave %d of %d bytes", n, e.size)
	}
	return e.mbps(d), nil
}

func (e *env) sshCat() (float64, error) {
	cmd := exec.Command(e.ssh[0], append(e.ssh[1:], "cat", e.file)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stdin = nil
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	n, d := countUntilEOF(out)
	_ = cmd.Wait()
	if n < e.size {
		return 0, fmt.Errorf("ssh gave %d of %d bytes", n, e.size)
	}
	return e.mbps(d), nil
}

// echoLoop types keys one at a time and times each echo. Every 64 keys it
// sends a newline and drains cat's copy of the line (untimed), so the line
// buffer never fills.
func echoLoop(keys int, send func([]byte) error, read func(want int) error) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, keys)
	inLine := 0
	for i := 0; i < keys; i++ {
		start := time.Now()
		if err := send([]byte{'k'}); err != nil {
			return nil, err
		}
		if err := read(1); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(start))
		inLine++
		if inLine == 64 {
			if err := send([]byte{'\n'}); err != nil {
				return nil, err
			}
			if err := read(2 + 64 + 2); err != nil { // echo CRLF, cat's line and CRLF
				return nil, err
			}
			inLine = 0
		}
	}
	return lat, nil
}

func (e *env) websocketEcho(keys int) ([]time.Duration, error) {
	c, err := e.dialWS("?shell=/bin/sh&cols=200&rows=50")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.WriteMessage(websocket.BinaryMessage, []byte("exec cat\n")); err != nil {
		return nil, err
	}
	// Let the shell print its prompt and exec cat, then make sure cat runs:
	// type a probe and read the echo and cat's copy of it.
	time.Sleep(500 * time.Millisecond)
	if err := c.WriteMessage(websocket.BinaryMessage, []byte("probe\n")); err != nil {
		return nil, err
	}
	if err := waitFor(c, "probe\r\nprobe\r\n"); err != nil {
		return nil, err
	}
	var pending int
	send := func(b []byte) error { return c.WriteMessage(websocket.BinaryMessage, b) }
	read := func(want int) error {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for pending < want {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return err
			}
			pending += len(msg)
		}
		pending -= want
		return nil
	}
	return echoLoop(keys, send, read)
}

func (e *env) sshEcho(keys int) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, e.ssh[0], append(e.ssh[1:], "cat")...)
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	if f, ok := outPipe.(*os.File); ok {
		_ = f.SetReadDeadline(time.Now().Add(2 * time.Minute))
	}
	out := bufio.NewReaderSize(outPipe, 64<<10)
	// Wait for the remote cat: type a probe and read it back.
	if _, err := in.Write([]byte("probe\n")); err != nil {
		return nil, err
	}
	var seen []byte
	for !bytes.Contains(seen, []byte("probe\r\nprobe\r\n")) {
		b, err := out.ReadByte()
		if err != nil {
			return nil, err
		}
		seen = append(seen, b)
	}
	send := func(b []byte) error { _, err := in.Write(b); return err }
	read := func(want int) error {
		_, err := io.ReadFull(out, make([]byte, want))
		return err
	}
	return echoLoop(keys, send, read)
}

// idleRSS starts n idle bash sessions and reports the service's RSS growth
// per session and the median RSS of one bash.
func (e *env) idleRSS(n int) (float64, float64, error) {
	pid := e.server.Process.Pid
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	base := rss(pid)
	var pids []int
	var ids []string
	for i := 0; i < n; i++ {
		resp, err := client.Post(e.url+"/api/v1/terminal/create", "application/json", strings.NewReader(`{"shell":"/bin/bash"}`))
		if err != nil {
			return 0, 0, err
		}
		var r terminal.CreateResponse
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || r.ID == "" {
			return 0, 0, fmt.Errorf("create %d: %v %d", i, err, resp.StatusCode)
		}
		pids = append(pids, r.PID)
		ids = append(ids, r.ID)
	}
	time.Sleep(3 * time.Second) // shells print their prompts and settle
	after := rss(pid)
	var shells []float64
	for _, p := range pids {
		shells = append(shells, rss(p))
	}
	for _, id := range ids {
		req, _ := http.NewRequest(http.MethodDelete, e.url+"/api/v1/terminal/"+id, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	return (after - base) / float64(n), median(shells), nil
}

func rss(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtList(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strings.Join(parts, ", ")
}

func printLat(name string, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	fmt.Printf("| %s | %.0f | %.0f | %.0f | %d |\n", name, q(0.50), q(0.99), q(1), len(lat))
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}
