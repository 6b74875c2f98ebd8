// Command tunnelbench measures the tunnel against its peers, side by side in
// one run (scripts/bench/tunnel.sh runs it): throughput of a bulk transfer
// over a direct loopback TCP connection (the limit), through `deckhand
// tunnel` + `deckhand service tunnel`, through two plain TCP relay
// processes (the same three hops with no protocol at all: what the hops
// themselves cost), and through `ssh -L` to a private sshd, both ways
// (upload: a sink in the container; download: a source there); and the round-trip latency of 1-byte ping-pongs over each path.
// Rounds interleave the paths so machine noise hits all alike; it prints
// medians and ratios as a Markdown table.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"deckhand/platform/platformtest"
	"deckhand/platform/proc"
)

var (
	deckhand = flag.String("deckhand", "bin/deckhand", "the deckhand binary")
	size     = flag.Int64("size", 1<<30, "bytes per transfer")
	rounds   = flag.Int("rounds", 5, "transfers per path")
	pings    = flag.Int("pings", 20000, "round trips per path for latency")
	noSSH    = flag.Bool("no-ssh", false, "skip ssh -L (no sshd)")
	relay    = flag.String("relay", "", "internal: run a plain TCP relay listen=target and nothing else")
)

func main() {
	flag.Parse()
	if *relay != "" {
		runRelay(*relay)
		return
	}
	dir, err := os.MkdirTemp("", "tunnelbench-")
	check(err)
	defer os.RemoveAll(dir)
	var procs []*exec.Cmd
	cleanup := func() {
		// Kill everything first, then reap: sshd's session processes
		// (their own session) outlive sshd until their ssh client goes.
		for _, p := range procs {
			_ = proc.KillGroup(p.Process.Pid, syscall.SIGKILL)
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}
	defer cleanup()
	fatal = func(v ...any) { cleanup(); log.Fatal(v...) }
	spawn := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(name, args...)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// nil: /dev/null, no copying goroutine a grandchild could hold up.
		c.Stdout, c.Stderr = nil, nil
		check(c.Start())
		procs = append(procs, c)
		return c
	}

	sink := serve(sinkConn)
	echo := serve(echoConn)
	source := serve(sourceConn)
	type path struct{ name, sink, echo, source string }
	paths := []path{{"direct loopback TCP", sink, echo, source}}

	// deckhand: the service and one client per target port.
	svc := freeAddr()
	spawn(*deckhand, "service", "tunnel", "--listen", svc, "--data", filepath.Join(dir, "data"), "--port-base", "40000", "--log-level", "error")
	waitHTTP("http://" + svc + "/health")
	tunnel := func(target string) string {
		local := freeAddr()
		spawn(*deckhand, "tunnel", "--url", "http://"+svc, "--local", local, "--remote", port(target), "--log-level", "error")
		waitTCP(local)
		return local
	}
	paths = append(paths, path{"deckhand tunnel", tunnel(sink), tunnel(echo), tunnel(source)})

	// The same three loopback hops through two plain relay processes
	// (io.Copy, which splices on Linux) with no framing, masking or
	// authentication at all: what the hops themselves cost.
	self, err := os.Executable()
	check(err)
	relayed := func(target string) string {
		mid, front := freeAddr(), freeAddr()
		spawn(self, "-relay", mid+"="+target)
		spawn(self, "-relay", front+"="+mid)
		waitTCP(front)
		return front
	}
	paths = append(paths, path{"2 plain TCP relays", relayed(sink), relayed(echo), relayed(source)})

	if !*noSSH {
		sshPort, key := startSSHD(dir, spawn)
		sSink, sEcho, sSource := freeAddr(), freeAddr(), freeAddr()
		spawn("ssh", "-F", "/dev/null", "-N", "-p", sshPort, "-i", key, "-o", "StrictHostKeyChecking=no",
			"-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes",
			"-L", sSink+":"+sink, "-L", sEcho+":"+echo, "-L", sSource+":"+source, "root@127.0.0.1")
		waitTCP(sSink)
		waitTCP(sEcho)
		waitTCP(sSource)
		paths = append(paths, path{"ssh -L (OpenSSH)", sSink, sEcho, sSource})
	}

	up := make([][]float64, len(paths))
	down := make([][]float64, len(paths))
	for r := 0; r < *rounds; r++ {
		for i, p := range paths {
			up[i] = append(up[i], transfer(p.sink, *size))
			down[i] = append(down[i], fetch(p.source, *size))
		}
	}
	lat := make([][]time.Duration, len(paths))
	for i, p := range paths {
		lat[i] = pingpong(p.echo, *pings)
	}

	for _, dir := range []struct {
		name string
		v    [][]float64
	}{{"upload (user → container: the client masks)", up}, {"download (container → user: unmasked, spliced by the service and the client)", down}} {
		fmt.Printf("Throughput, %s: %d MiB per transfer, %d rounds (paths interleaved), median MiB/s\n\n", dir.name, *size>>20, *rounds)
		fmt.Println("| path | median MiB/s | min | max | vs direct |")
		fmt.Println("|---|---|---|---|---|")
		direct := median(dir.v[0])
		for i, p := range paths {
			m := median(dir.v[i])
			sorted := append([]float64(nil), dir.v[i]...)
			sort.Float64s(sorted)
			fmt.Printf("| %s | %.0f | %.0f | %.0f | %.0f%% |\n", p.name, m, sorted[0], sorted[len(sorted)-1], 100*m/direct)
		}
		fmt.Printf("\ndeckhand tunnel / plain relays: %.2fx\n", median(dir.v[1])/median(dir.v[2]))
		if len(paths) > 3 {
			fmt.Printf("deckhand tunnel / ssh -L: %.2fx\n", median(dir.v[1])/median(dir.v[3]))
		}
		fmt.Println()
	}
	fmt.Printf("Latency: %d round trips of 1 byte on one connection per path\n\n", *pings)
	fmt.Println("| path | p50 | p99 | p99.9 | added p50 | added p99 |")
	fmt.Println("|---|---|---|---|---|---|")
	for i, p := range paths {
		l := lat[i]
		fmt.Printf("| %s | %v | %v | %v | %v | %v |\n", p.name, pct(l, 50), pct(l, 99), pct(l, 99.9),
			pct(l, 50)-pct(lat[0], 50), pct(l, 99)-pct(lat[0], 99))
	}
}

// runRelay forwards a listen address to its target, byte for byte, until
// killed.
func runRelay(spec string) {
	listen, target, _ := strings.Cut(spec, "=")
	ln, err := net.Listen("tcp", listen)
	check(err)
	platformtest.Relay(ln, target)
}

// fatal ends the run after killing what it started.
var fatal = func(v ...any) { log.Fatal(v...) }

func check(err error) {
	if err != nil {
		fatal(err)
	}
}

// serve runs a TCP server on a free loopback port.
func serve(fn func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go fn(c)
		}
	}()
	return ln.Addr().String()
}

// sourceConn reads a byte count line, writes that many bytes and closes.
func sourceConn(c net.Conn) {
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return
	}
	left, err := strconv.ParseInt(line[:len(line)-1], 10, 64)
	if err != nil {
		return
	}
	for left > 0 {
		n := min(left, int64(len(zeros)))
		w, err := c.Write(zeros[:n])
		if err != nil {
			return
		}
		left -= int64(w)
	}
}

// fetch asks the source for size bytes and reads them to end of stream
// (as the sink does, in 256 KiB reads): MiB/s.
func fetch(addr string, size int64) float64 {
	c, err := net.Dial("tcp", addr)
	check(err)
	defer c.Close()
	start := time.Now()
	_, err = fmt.Fprintf(c, "%d\n", size)
	check(err)
	n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, c, make([]byte, 256<<10))
	check(err)
	if n != size {
		fatal(fmt.Sprintf("%s: got %d bytes from the source, want %d", addr, n, size))
	}
	return float64(size) / (1 << 20) / time.Since(start).Seconds()
}

// sinkConn reads to end of stream, then answers the byte count: the sender's
// clock stops only once every byte arrived.
func sinkConn(c net.Conn) {
	defer c.Close()
	n, _ := io.CopyBuffer(struct{ io.Writer }{io.Discard}, c, make([]byte, 256<<10)) // 256 KiB reads (not Discard's 8 KiB ReadFrom)
	fmt.Fprintf(c, "%d\n", n)
}

func echoConn(c net.Conn) {
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	buf := make([]byte, 1)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		if _, err := c.Write(buf); err != nil {
			return
		}
	}
}

var zeros = make([]byte, 256<<10)

// transfer sends size bytes, half-closes and waits for the count: MiB/s.
func transfer(addr string, size int64) float64 {
	c, err := net.Dial("tcp", addr)
	check(err)
	defer c.Close()
	start := time.Now()
	left := size
	for left > 0 {
		n := int64(len(zeros))
		if left < n {
			n = left
		}
		w, err := c.Write(zeros[:n])
		check(err)
		left -= int64(w)
	}
	check(c.(*net.TCPConn).CloseWrite())
	line, err := bufio.NewReader(c).ReadString('\n')
	check(err)
	if line != strconv.FormatInt(size, 10)+"\n" {
		fatal(fmt.Sprintf("%s: sink got %q, want %d", addr, line, size))
	}
	return float64(size) / (1 << 20) / time.Since(start).Seconds()
}

func pingpong(addr string, n int) []time.Duration {
	c, err := net.Dial("tcp", addr)
	check(err)
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	b := []byte{'x'}
	out := make([]time.Duration, 0, n)
	for i := 0; i < n+200; i++ {
		start := time.Now()
		_, err := c.Write(b)
		check(err)
		_, err = io.ReadFull(c, b)
		check(err)
		if i >= 200 { // warm-up
			out = append(out, time.Since(start))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i].Round(time.Microsecond)
}

func median(v []float64) float64 {
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	return c[len(c)/2]
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().String()
}

func port(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

func waitTCP(addr string) {
	for i := 0; i < 1000; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	fatal(fmt.Sprintf("nothing listens on %s", addr))
}

func waitHTTP(url string) {
	for i := 0; i < 1000; i++ {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	fatal(fmt.Sprintf("%s does not answer", url))
}

var portRE = regexp.MustCompile(`:(\d+)$`)

// startSSHD runs a private sshd on a loopback port (root needed).
func startSSHD(dir string, spawn func(string, ...string) *exec.Cmd) (port, key string) {
	sd := filepath.Join(dir, "ssh")
	check(os.MkdirAll(sd, 0o700))
	for _, k := range []string{"host", "user"} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(sd, k)).CombinedOutput()
		if err != nil {
			fatal(fmt.Sprintf("ssh-keygen: %v %s", err, out))
		}
	}
	pub, _ := os.ReadFile(filepath.Join(sd, "user.pub"))
	check(os.WriteFile(filepath.Join(sd, "authorized_keys"), pub, 0o600))
	_ = os.MkdirAll("/run/sshd", 0o755)
	addr := freeAddr()
	port = portRE.FindStringSubmatch(addr)[1]
	cfg := fmt.Sprintf("Port %s\nListenAddress 127.0.0.1\nHostKey %s/host\nPidFile %s/pid\nAuthorizedKeysFile %s/authorized_keys\n"+
		"PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\n"+
		"StrictModes no\nLogLevel ERROR\nSetEnv HOME=%s\n", port, sd, sd, sd, sd)
	check(os.WriteFile(filepath.Join(sd, "sshd_config"), []byte(cfg), 0o600))
	spawn("/usr/sbin/sshd", "-D", "-e", "-f", filepath.Join(sd, "sshd_config"))
	waitTCP(addr)
	return port, filepath.Join(sd, "user")
}
