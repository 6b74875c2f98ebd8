// Package netlab builds throwaway network labs for tests, as root: three
// network namespaces made for the test (the container, a proxy host that
// also routes, and a target host), real proxies from Debian on the proxy
// host (dante for SOCKS5 with a user and password, tinyproxy for HTTP
// CONNECT with Basic auth, stunnel for CONNECT over TLS in front of
// tinyproxy), and web and DNS servers on the target host that record who
// reached them. Every address lives inside the lab's namespaces; nothing
// outside them is touched, and Cleanup removes them.
//
//	container 10.77.1.2 ── 10.77.1.1 proxy host 10.77.2.1 ── 10.77.2.2, .3, .4 target
//
// The container's default route goes through the proxy host, so a
// connection that bypasses the proxies still arrives, from 10.77.1.2:
// the target's records tell a proxied connection (from 10.77.2.1) from a
// leak.
package netlab

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"deckhand/platform/proc"
)

// Addresses of the lab.
const (
	ContainerAddr = "10.77.1.2"
	ProxyAddr     = "10.77.1.1" // the proxies listen here
	ProxyOutAddr  = "10.77.2.1" // the proxies connect from here
	TargetAddr    = "10.77.2.2" // web (80, 443) and DNS (53)
	Target2Addr   = "10.77.2.3" // a second web host (80, 443)
	StrayDNSAddr  = "10.77.2.4" // a DNS server the configuration does not name
)

// Ports of the proxies.
const (
	SOCKSPort = 1080
	HTTPPort  = 8888
	HTTPSPort = 8443
)

// Lab is one set of namespaces and what runs in them.
type Lab struct {
	t   testing.TB
	Dir string
	// Container, Proxy and Target are the namespaces' names.
	Container, Proxy, Target string
	// CAFile is the PEM of the CA that signed the lab's TLS certificates
	// (the https proxy's and the web servers').
	CAFile  string
	tlsCert tls.Certificate
	leafPEM string
	keyPEM  string

	mu    sync.Mutex
	procs []*Proc
}

var (
	seq       atomic.Int64
	sweepOnce sync.Once
)

// Skip skips t unless it runs as root with iproute2 and netns support.
func Skip(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 (ip) is not installed: scripts/setup.sh")
	}
}

// New makes the lab's namespaces, links and routes.
func New(t testing.TB) *Lab {
	t.Helper()
	Skip(t)
	sweepOnce.Do(sweep)
	n := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(seq.Add(1), 10)
	l := &Lab{t: t, Dir: t.TempDir(), Container: "dhc-" + n, Proxy: "dhp-" + n, Target: "dht-" + n}
	t.Cleanup(l.cleanup)
	for _, ns := range []string{l.Container, l.Proxy, l.Target} {
		l.ip("netns", "add", ns)
	}
	l.ip("link", "add", "name", "eth0", "netns", l.Container, "type", "veth", "peer", "name", "c0", "netns", l.Proxy)
	l.ip("link", "add", "name", "eth0", "netns", l.Target, "type", "veth", "peer", "name", "t0", "netns", l.Proxy)
	for _, c := range [][]string{
		{l.Container, "addr", "add", ContainerAddr + "/24", "dev", "eth0"},
		{l.Container, "link", "set", "eth0", "up"},
		{l.Container, "link", "set", "lo", "up"},
		{l.Container, "route", "add", "default", "via", ProxyAddr},
		{l.Proxy, "addr", "add", ProxyAddr + "/24", "dev", "c0"},
		{l.Proxy, "addr", "add", ProxyOutAddr + "/24", "dev", "t0"},
		{l.Proxy, "link", "set", "c0", "up"},
		{l.Proxy, "link", "set", "t0", "up"},
		{l.Proxy, "link", "set", "lo", "up"},
		{l.Target, "addr", "add", TargetAddr + "/24", "dev", "eth0"},
		{l.Target, "addr", "add", Target2Addr + "/24", "dev", "eth0"},
		{l.Target, "addr", "add", StrayDNSAddr + "/24", "dev", "eth0"},
		{l.Target, "link", "set", "eth0", "up"},
		{l.Target, "link", "set", "lo", "up"},
		{l.Target, "route", "add", "default", "via", ProxyOutAddr},
	} {
		l.ip(append([]string{"-n", c[0]}, c[1:]...)...)
	}
	if out, err := l.Exec(l.Proxy, "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
		t.Fatalf("netlab: enable forwarding: %v: %s", err, out)
	}
	l.makeCerts()
	return l
}

func (l *Lab) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("netlab: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func (l *Lab) cleanup() {
	l.mu.Lock()
	procs := l.procs
	l.procs = nil
	l.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Stop()
	}
	for _, ns := range []string{l.Container, l.Proxy, l.Target} {
		_ = exec.Command("ip", "netns", "del", ns).Run()
		_ = os.RemoveAll(filepath.Join("/etc/netns", ns))
	}
}

// Exec is a command run in namespace ns (`ip netns exec`, which execs
// it in place). It dies with the test binary, should that be killed
// before its cleanup runs.
func (l *Lab) Exec(ns string, argv ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// labName is a lab namespace's name: dh<c|p|t>-<test binary pid>-<n>.
var labName = regexp.MustCompile(`^dh[cpt]-([0-9]+)-[0-9]+$`)

// sweep removes the namespaces of labs whose test binary is gone (killed
// before its cleanup ran), ending what still runs in them.
func sweep() {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		m := labName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue
		}
		out, _ := exec.Command("ip", "netns", "pids", e.Name()).Output()
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = exec.Command("ip", "netns", "del", e.Name()).Run()
		_ = os.RemoveAll(filepath.Join("/etc/netns", e.Name()))
	}
}

// Resolver makes `ip netns exec` processes in ns use nameserver (their
// /etc/resolv.conf, through /etc/netns/<ns>/resolv.conf).
func (l *Lab) Resolver(ns, nameserver string) {
	l.t.Helper()
	dir := filepath.Join("/etc/netns", ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte("nameserver "+nameserver+"\noptions timeout:2 attempts:1\n"), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// NSFile opens namespace ns (for setns or nftables' WithNetNSFd).
func (l *Lab) NSFile(ns string) *os.File {
	l.t.Helper()
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		l.t.Fatal(err)
	}
	return f
}

// In runs f on an OS thread inside namespace ns. Sockets f opens stay in
// ns after it returns, whatever thread later uses them.
func (l *Lab) In(ns string, f func()) {
	l.t.Helper()
	if err := inNS(ns, f); err != nil {
		l.t.Fatal(err)
	}
}

func inNS(ns string, f func()) error {
	target, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		return err
	}
	defer target.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- err
			return
		}
		defer self.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Errorf("panic: %v", r)
				}
			}()
			f()
		}()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it dies with this goroutine.
			done <- fmt.Errorf("setns back: %w", err)
			return
		}
		runtime.UnlockOSThread()
		done <- nil
	}()
	return <-done
}

// AsUser runs f on an OS thread of its own inside namespace ns as uid
// and gid 65534 (nobody), with no capability but those in keep (effective
// and permitted). Sockets f opens belong to nobody and stay in ns. Every
// change is a raw syscall on that thread alone, and the thread never
// goes back to the pool: it ends with f's goroutine.
func (l *Lab) AsUser(ns string, keep []uintptr, f func()) {
	l.t.Helper()
	nsf := l.NSFile(ns)
	defer nsf.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked
		if err := unix.Setns(int(nsf.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		if len(keep) > 0 {
			if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_KEEPCAPS, 1, 0, 0, 0, 0); e != 0 {
				done <- e
				return
			}
		}
		for _, c := range [][4]uintptr{
			{unix.SYS_SETGROUPS, 0, 0},
			{unix.SYS_SETRESGID, 65534, 65534, 65534},
			{unix.SYS_SETRESUID, 65534, 65534, 65534},
		} {
			if _, _, e := unix.RawSyscall(c[0], c[1], c[2], c[3]); e != 0 {
				done <- e
				return
			}
		}
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		for _, c := range keep {
			data[c/32].Effective |= 1 << (c % 32)
			data[c/32].Permitted |= 1 << (c % 32)
		}
		if _, _, e := unix.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
			done <- e
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		l.t.Fatalf("netlab: run as nobody in %s: %v", ns, err)
	}
}

// DialContext connects from inside namespace ns.
func (l *Lab) DialContext(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		var derr error
		if err := inNS(ns, func() { c, derr = (&net.Dialer{}).DialContext(ctx, network, addr) }); err != nil {
			return nil, err
		}
		return c, derr
	}
}

// HTTPClient is a client whose connections start inside namespace ns.
func (l *Lab) HTTPClient(ns string) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: l.DialContext(ns)}}
}

// Relay listens on listenAddr inside ns and carries each connection to
// target, dialed from the test's own namespace (a control plane on the
// test's loopback, reached from the lab).
func (l *Lab) Relay(ns, listenAddr, target string) {
	l.t.Helper()
	ln := l.Listen(ns, "tcp", listenAddr)
	l.t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.DialTimeout("tcp", target, 5*time.Second)
				if err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
				<-done
			}()
		}
	}()
}

// Listen opens a listener inside ns.
func (l *Lab) Listen(ns, network, addr string) net.Listener {
	l.t.Helper()
	var ln net.Listener
	var err error
	l.In(ns, func() { ln, err = net.Listen(network, addr) })
	if err != nil {
		l.t.Fatalf("netlab: listen %s %s in %s: %v", network, addr, ns, err)
	}
	return ln
}

// ListenPacket opens a packet listener inside ns.
func (l *Lab) ListenPacket(ns, network, addr string) net.PacketConn {
	l.t.Helper()
	var pc net.PacketConn
	var err error
	l.In(ns, func() { pc, err = net.ListenPacket(network, addr) })
	if err != nil {
		l.t.Fatalf("netlab: listen %s %s in %s: %v", network, addr, ns, err)
	}
	return pc
}

// Proc is a process the lab started (by its own id, in its own group).
type Proc struct {
	Name    string
	LogFile string
	cmd     *exec.Cmd
	out     *strings.Builder
	outMu   sync.Mutex
	done    chan struct{}
	stopped atomic.Bool
}

func (p *Proc) Write(b []byte) (int, error) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	return p.out.Write(b)
}

// Output is what the process wrote on stdout and stderr.
func (p *Proc) Output() string {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	return p.out.String()
}

// Log is the process's log file.
func (p *Proc) Log() string {
	b, _ := os.ReadFile(p.LogFile)
	return string(b)
}

// Stop ends the process (SIGTERM, then SIGKILL) and waits.
func (p *Proc) Stop() {
	if !p.stopped.CompareAndSwap(false, true) {
		<-p.done
		return
	}
	proc.StopTree(p.cmd.Process.Pid, syscall.SIGTERM, 5*time.Second, p.done)
}

// Kill ends the process at once (a crash) and waits.
func (p *Proc) Kill() {
	p.stopped.Store(true)
	_ = proc.KillGroup(p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Done is closed when the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Start runs cmd as one of the lab's processes; its stdout and stderr,
// where cmd does not set them, are kept for Output.
func (l *Lab) Start(name string, cmd *exec.Cmd, logFile string) *Proc {
	l.t.Helper()
	p := &Proc{Name: name, LogFile: logFile, cmd: cmd, out: &strings.Builder{}, done: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = p
	}
	if cmd.Stderr == nil {
		cmd.Stderr = p
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		l.t.Fatalf("netlab: start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	return p
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitPort waits until addr accepts TCP inside ns, or p exits.
func (l *Lab) waitPort(p *Proc, ns, addr string) {
	l.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if p.Exited() {
			l.t.Fatalf("netlab: %s exited at start:\n%s\n%s", p.Name, p.Output(), p.Log())
		}
		ok := false
		l.In(ns, func() {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				ok = true
			}
		})
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	l.t.Fatalf("netlab: %s never listened on %s:\n%s\n%s", p.Name, addr, p.Output(), p.Log())
}

// Dante runs danted on the proxy host (ProxyAddr:SOCKSPort) taking only
// user and password (system password authentication against a passwd
// and shadow bind-mounted in the daemon's own mount namespace).
func (l *Lab) Dante(user, pass string) *Proc {
	l.t.Helper()
	for _, bin := range []string{"danted", "openssl", "unshare"} {
		if _, err := exec.LookPath(bin); err != nil {
			l.t.Skipf("%s is not installed: scripts/setup.sh (dante-server)", bin)
		}
	}
	dir := filepath.Join(l.Dir, "dante")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		l.t.Fatal(err)
	}
	hashed, err := opensslHash(pass)
	if err != nil {
		l.t.Fatal(err)
	}
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			l.t.Fatal(err)
		}
		return p
	}
	passwd := write("passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"+
		user+":x:40000:40000::/nonexistent:/usr/sbin/nologin\n", 0o644)
	shadow := write("shadow", "root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n"+user+":"+hashed+":19000:0:99999:7:::\n", 0o600)
	logFile := filepath.Join(dir, "danted.log")
	conf := write("danted.conf", fmt.Sprintf(`logoutput: %s
internal: %s port = %d
external: %s
socksmethod: username
clientmethod: none
user.privileged: root
user.unprivileged: nobody
client pass {
  from: 0.0.0.0/0 to: 0.0.0.0/0
  log: error connect disconnect
}
socks pass {
  from: 0.0.0.0/0 to: 0.0.0.0/0
  command: connect
  log: error connect disconnect
}
`, logFile, ProxyAddr, SOCKSPort, ProxyOutAddr), 0o644)
	script := fmt.Sprintf("mount --bind %s /etc/passwd && mount --bind %s /etc/shadow && exec danted -f %s -p %s",
		passwd, shadow, conf, filepath.Join(dir, "danted.pid"))
	p := l.Start("danted", l.Exec(l.Proxy, "unshare", "-m", "--propagation", "private", "sh", "-c", script), logFile)
	l.waitPort(p, l.Proxy, net.JoinHostPort(ProxyAddr, strconv.Itoa(SOCKSPort)))
	return p
}

// opensslHash is a SHA-512 crypt hash of pass for a shadow file.
func opensslHash(pass string) (string, error) {
	cmd := exec.Command("openssl", "passwd", "-6", "-stdin")
	cmd.Stdin = strings.NewReader(pass + "\n")
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// Tinyproxy runs tinyproxy on the proxy host (HTTPPort on every address
// of it) with Basic auth; its log records each CONNECT.
func (l *Lab) Tinyproxy(user, pass string) *Proc {
	l.t.Helper()
	if _, err := exec.LookPath("tinyproxy"); err != nil {
		l.t.Skip("tinyproxy is not installed: scripts/setup.sh")
	}
	dir := filepath.Join(l.Dir, "tinyproxy")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		l.t.Fatal(err)
	}
	logFile := filepath.Join(dir, "tinyproxy.log")
	conf := filepath.Join(dir, "tinyproxy.conf")
	body := fmt.Sprintf(`Port %d
Listen 0.0.0.0
Timeout 60
LogFile "%s"
LogLevel Connect
PidFile "%s"
MaxClients 200
Allow 10.77.1.0/24
Allow 127.0.0.1
BasicAuth %s %s
DisableViaHeader Yes
`, HTTPPort, logFile, filepath.Join(dir, "tinyproxy.pid"), user, pass)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		l.t.Fatal(err)
	}
	p := l.Start("tinyproxy", l.Exec(l.Proxy, "tinyproxy", "-d", "-c", conf), logFile)
	l.waitPort(p, l.Proxy, net.JoinHostPort(ProxyAddr, strconv.Itoa(HTTPPort)))
	return p
}

// Stunnel runs stunnel on the proxy host: TLS on HTTPSPort (the lab's
// certificate, for ProxyAddr and proxy.test) in front of tinyproxy, so
// the two make an https proxy.
func (l *Lab) Stunnel() *Proc {
	l.t.Helper()
	bin, err := exec.LookPath("stunnel4")
	if err != nil {
		if bin, err = exec.LookPath("stunnel"); err != nil {
			l.t.Skip("stunnel is not installed: scripts/setup.sh (stunnel4)")
		}
	}
	dir := filepath.Join(l.Dir, "stunnel")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		l.t.Fatal(err)
	}
	pemFile := filepath.Join(dir, "proxy.pem")
	if err := os.WriteFile(pemFile, []byte(l.leafPEM+l.keyPEM), 0o600); err != nil {
		l.t.Fatal(err)
	}
	logFile := filepath.Join(dir, "stunnel.log")
	conf := filepath.Join(dir, "stunnel.conf")
	body := fmt.Sprintf(`foreground = yes
pid =
output = %s
[https-proxy]
accept = %s:%d
connect = 127.0.0.1:%d
cert = %s
`, logFile, ProxyAddr, HTTPSPort, HTTPPort, pemFile)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		l.t.Fatal(err)
	}
	p := l.Start("stunnel", l.Exec(l.Proxy, bin, conf), logFile)
	l.waitPort(p, l.Proxy, net.JoinHostPort(ProxyAddr, strconv.Itoa(HTTPSPort)))
	return p
}

// makeCerts makes a CA and one leaf for the proxy and the web hosts.
func (l *Lab) makeCerts() {
	l.t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netlab CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		l.t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "netlab"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames:    []string{"proxy.test", "allowed.test", "evil.test", "other.allowed.test"},
		IPAddresses: []net.IP{net.ParseIP(ProxyAddr), net.ParseIP(TargetAddr), net.ParseIP(Target2Addr)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		l.t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	l.leafPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	l.keyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
	l.tlsCert, err = tls.X509KeyPair([]byte(l.leafPEM), []byte(l.keyPEM))
	if err != nil {
		l.t.Fatal(err)
	}
	l.CAFile = filepath.Join(l.Dir, "ca.pem")
	if err := os.WriteFile(l.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// Hit is one request a web host served.
type Hit struct {
	Remote string // the client's address (no port)
	Host   string
	TLS    bool
	SNI    string
}

// Web is a web host in the target namespace (HTTP on 80, HTTPS on 443)
// answering "hello from <addr>" and recording every request.
type Web struct {
	Addr string
	mu   sync.Mutex
	hits []Hit
}

// Hits are the requests served so far.
func (w *Web) Hits() []Hit {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Hit(nil), w.hits...)
}

// Web starts a web host on addr in the target namespace.
func (l *Lab) Web(addr string) *Web {
	l.t.Helper()
	w := &Web{Addr: addr}
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		hit := Hit{Remote: host, Host: r.Host, TLS: r.TLS != nil}
		if r.TLS != nil {
			hit.SNI = r.TLS.ServerName
		}
		w.mu.Lock()
		w.hits = append(w.hits, hit)
		w.mu.Unlock()
		if n, err := strconv.Atoi(r.URL.Query().Get("bytes")); err == nil && n > 0 {
			rw.Header().Set("Content-Length", strconv.Itoa(n))
			buf := make([]byte, 64<<10)
			for n > 0 {
				k := min(n, len(buf))
				if _, err := rw.Write(buf[:k]); err != nil {
					return
				}
				n -= k
			}
			return
		}
		fmt.Fprintf(rw, "hello from %s\n", addr)
	})
	plain := l.Listen(l.Target, "tcp", net.JoinHostPort(addr, "80"))
	secure := tls.NewListener(l.Listen(l.Target, "tcp", net.JoinHostPort(addr, "443")),
		&tls.Config{Certificates: []tls.Certificate{l.tlsCert}})
	s1, s2 := &http.Server{Handler: h}, &http.Server{Handler: h}
	go func() { _ = s1.Serve(plain) }()
	go func() { _ = s2.Serve(secure) }()
	l.t.Cleanup(func() { _ = s1.Close(); _ = s2.Close() })
	return w
}

// Query is one DNS question a server got.
type Query struct {
	Name   string
	From   string // client address (no port)
	Net    string // udp or tcp
	Server string
}

// DNS is a DNS server in the target namespace answering A records from
// a fixed zone and recording each question.
type DNS struct {
	Addr string
	mu   sync.Mutex
	qs   []Query
}

// Queries are the questions received so far.
func (d *DNS) Queries() []Query {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Query(nil), d.qs...)
}

// DNS starts a DNS server (UDP and TCP port 53) on addr in the target
// namespace; zone maps a name (no trailing dot) to its IPv4 address.
func (l *Lab) DNS(addr string, zone map[string]string) *DNS {
	l.t.Helper()
	d := &DNS{Addr: addr}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		host, _, _ := net.SplitHostPort(w.RemoteAddr().String())
		netw := "udp"
		if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
			netw = "tcp"
		}
		for _, qq := range q.Question {
			name := strings.TrimSuffix(strings.ToLower(qq.Name), ".")
			d.mu.Lock()
			d.qs = append(d.qs, Query{Name: name, From: host, Net: netw, Server: addr})
			d.mu.Unlock()
			ip, ok := zone[name]
			if !ok {
				m.Rcode = dns.RcodeNameError
				continue
			}
			if qq.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: qq.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
					A: net.ParseIP(ip).To4()})
			}
		}
		_ = w.WriteMsg(m)
	})
	pc := l.ListenPacket(l.Target, "udp", net.JoinHostPort(addr, "53"))
	ln := l.Listen(l.Target, "tcp", net.JoinHostPort(addr, "53"))
	u, t := &dns.Server{PacketConn: pc, Handler: h}, &dns.Server{Listener: ln, Handler: h}
	go func() { _ = u.ActivateAndServe() }()
	go func() { _ = t.ActivateAndServe() }()
	l.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = u.ShutdownContext(ctx)
		_ = t.ShutdownContext(ctx)
	})
	return d
}

// Curl runs curl in the container namespace and returns its exit code,
// stdout and stderr. Its environment is PATH alone: no proxy from the
// test's environment applies.
func (l *Lab) Curl(args ...string) (code int, stdout, stderr string) {
	l.t.Helper()
	cmd := l.Exec(l.Container, append([]string{"curl", "-sS", "--max-time", "20"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	} else if err != nil {
		l.t.Fatalf("netlab: curl: %v", err)
	}
	return 0, out.String(), errb.String()
}

// Lines returns the lines of s that contain every one of subs.
func Lines(s string, subs ...string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
next:
	for sc.Scan() {
		for _, sub := range subs {
			if !strings.Contains(sc.Text(), sub) {
				continue next
			}
		}
		out = append(out, sc.Text())
	}
	return out
}

// Pid is the process's id (for reading its /proc figures).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }
