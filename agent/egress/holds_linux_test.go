package egress_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"deckhand/agent/egress"
	"deckhand/platform/platformtest/netlab"
)

// IPv6 addresses the tests add to a lab (netlab builds IPv4 only).
const (
	container6 = "fd77:1::2"
	target6    = "fd77:2::2"
)

// addIPv6 gives the lab's container and target IPv6 addresses routed
// through the proxy host.
func addIPv6(t *testing.T, l *netlab.Lab) {
	t.Helper()
	for _, c := range [][]string{
		{l.Container, "addr", "add", container6 + "/64", "dev", "eth0", "nodad"},
		{l.Proxy, "addr", "add", "fd77:1::1/64", "dev", "c0", "nodad"},
		{l.Proxy, "addr", "add", "fd77:2::1/64", "dev", "t0", "nodad"},
		{l.Target, "addr", "add", target6 + "/64", "dev", "eth0", "nodad"},
		{l.Container, "-6", "route", "add", "default", "via", "fd77:1::1"},
		{l.Target, "-6", "route", "add", "default", "via", "fd77:2::1"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", c[0]}, c[1:]...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v %s", c, err, out)
		}
	}
	if out, err := l.Exec(l.Proxy, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1").CombinedOutput(); err != nil {
		t.Fatalf("sysctl: %v %s", err, out)
	}
}

// udpLog is a UDP server on the target host that records every datagram
// and answers each with "echo <payload>".
type udpLog struct {
	mu  sync.Mutex
	got []string
}

func (u *udpLog) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.got...)
}

func listenUDP(t *testing.T, l *netlab.Lab, ns, network, addr string) *udpLog {
	t.Helper()
	pc := l.ListenPacket(ns, network, addr)
	t.Cleanup(func() { pc.Close() })
	u := &udpLog{}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			u.mu.Lock()
			u.got = append(u.got, from.String()+" "+string(buf[:n]))
			u.mu.Unlock()
			_, _ = pc.WriteTo(append([]byte("echo "), buf[:n]...), from)
		}
	}()
	return u
}

func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}
	}
	return &unix.SockaddrInet6{Addr: ap.Addr().As16(), Port: int(ap.Port())}
}

// waitNone fails t if u records anything within a second.
func waitNone(t *testing.T, u *udpLog, what string) {
	t.Helper()
	time.Sleep(time.Second)
	if got := u.seen(); len(got) != 0 {
		t.Fatalf("%s reached the target host: %q", what, got)
	}
}

// An unprivileged socket binds the target's address (a non-local bind,
// allowed without any capability) and sends one datagram to the
// container's own address: conntrack then has target → container as the
// original direction. Another socket's datagrams to the target are that
// connection's "replies"; they must not leave. Datagrams others send to
// the container from outside are still answered.
func TestEngineRefusesRepliesOfConnectionsOpenedInsideInAnotherHostsName(t *testing.T) {
	t.Parallel()
	l := netlab.New(t)
	addIPv6(t, l)
	type family struct {
		name, network     string
		container, target string
		// level, opt: the socket option that allows the foreign
		// source; keep: the capabilities it takes.
		level, opt int
		keep       []uintptr
		af         int
		log        *udpLog
	}
	fams := []*family{
		// IPv6 sends from a non-local bind with no capability at all.
		{name: "IPv6", network: "udp6", container: container6, target: target6, level: unix.SOL_IPV6, opt: unix.IPV6_FREEBIND, af: unix.AF_INET6},
		// IPv4 routes a foreign source only for a transparent socket,
		// which takes CAP_NET_RAW (in Docker's default set).
		{name: "IPv4", network: "udp4", container: netlab.ContainerAddr, target: netlab.TargetAddr, level: unix.SOL_IP, opt: unix.IP_TRANSPARENT,
			keep: []uintptr{unix.CAP_NET_RAW}, af: unix.AF_INET},
	}
	for _, f := range fams {
		f.log = listenUDP(t, l, l.Target, f.network, net.JoinHostPort(f.target, "9999"))
		listenUDP(t, l, l.Container, f.network, net.JoinHostPort(f.container, "7000"))
		// Before any rule the target is reached: the lab would show a
		// leak.
		if err := sendAsNobody(t, l, f.af, netip.AddrPortFrom(netip.MustParseAddr(f.target), 9999), "before"); err != nil || !waitSeen(f.log, "before") {
			t.Fatalf("%s: the target never got a plain datagram (%v): %q", f.name, err, f.log.seen())
		}
	}
	e := startEngine(t, l, l.Container, nil)
	e.apply(doc("block", "", true, 1))

	for i, f := range fams {
		t.Run(f.name, func(t *testing.T) {
			before := len(f.log.seen())
			target := netip.AddrPortFrom(netip.MustParseAddr(f.target), 9999)
			local := netip.AddrPortFrom(netip.MustParseAddr(f.container), uint16(41000+i))
			if err := sendAsNobody(t, l, f.af, target, "plain"); !errors.Is(err, unix.EPERM) {
				t.Fatalf("a plain datagram under block: %v, want EPERM", err)
			}
			var sendErr error
			l.AsUser(l.Container, f.keep, func() {
				b, err := unix.Socket(f.af, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					sendErr = err
					return
				}
				defer unix.Close(b)
				if sendErr = unix.Bind(b, sockaddr(local)); sendErr != nil {
					return
				}
				a, err := unix.Socket(f.af, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					sendErr = err
					return
				}
				defer unix.Close(a)
				if sendErr = unix.SetsockoptInt(a, f.level, f.opt, 1); sendErr != nil {
					return
				}
				if sendErr = unix.Bind(a, sockaddr(target)); sendErr != nil {
					return
				}

				if sendErr = unix.Sendto(a, []byte("open"), 0, sockaddr(local)); sendErr != nil {
					sendErr = fmt.Errorf("open: %w", sendErr)
					return
				}
				var errs []error
				for k := 0; k < 3; k++ {
					errs = append(errs, unix.Sendto(b, []byte("leak"), 0, sockaddr(target)))
				}
				sendErr = errors.Join(errs...)
			})
			if !errors.Is(sendErr, unix.EPERM) {
				t.Errorf("the reply trick's send: %v, want EPERM", sendErr)
			}
			time.Sleep(time.Second)
			if got := f.log.seen()[before:]; len(got) != 0 {
				t.Fatalf("datagrams sent as replies of a connection opened inside reached the target host: %q", got)
			}
		})
	}

	t.Run("others' datagrams are still answered", func(t *testing.T) {
		for _, f := range fams {
			var got string
			l.In(l.Target, func() {
				conn, err := net.Dial(f.network, net.JoinHostPort(f.container, "7000"))
				if err != nil {
					got = err.Error()
					return
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				_, _ = conn.Write([]byte("hi"))
				buf := make([]byte, 64)
				n, err := conn.Read(buf)
				if err != nil {
					got = err.Error()
					return
				}
				got = string(buf[:n])
			})
			if got != "echo hi" {
				t.Fatalf("%s: a datagram from outside was not answered: %q", f.name, got)
			}
		}
	})
}

func waitSeen(u *udpLog, payload string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range u.seen() {
			if strings.HasSuffix(s, " "+payload) {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// sendAsNobody sends one datagram as nobody from the container.
func sendAsNobody(t *testing.T, l *netlab.Lab, family int, to netip.AddrPort, payload string) error {
	t.Helper()
	var sendErr error
	l.AsUser(l.Container, nil, func() {
		s, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			sendErr = err
			return
		}
		defer unix.Close(s)
		sendErr = unix.Sendto(s, []byte(payload), 0, sockaddr(to))
	})
	return sendErr
}

// A program given CAP_NET_RAW (in Docker's default set; a ping with file
// capabilities has it too) can put the agent's mark on its socket. That
// must not let it out: the agent's sockets are told by their owner too.
func TestEngineMarkFromAnotherUserDoesNotPass(t *testing.T) {
	t.Parallel()
	l := netlab.New(t)
	target := netip.AddrPortFrom(netip.MustParseAddr(netlab.TargetAddr), 9997)
	u := listenUDP(t, l, l.Target, "udp4", target.String())
	e := startEngine(t, l, l.Container, nil)
	e.apply(doc("block", "", true, 1))
	var markErr, sendErr error
	l.AsUser(l.Container, []uintptr{unix.CAP_NET_RAW}, func() {
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			markErr = err
			return
		}
		defer unix.Close(s)
		if markErr = unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_MARK, egress.DefaultMark); markErr != nil {
			return
		}
		sendErr = unix.Sendto(s, []byte("marked"), 0, sockaddr(target))
	})
	if markErr != nil {
		t.Skipf("this kernel does not let CAP_NET_RAW set SO_MARK (%v): nothing to test", markErr)
	}
	if !errors.Is(sendErr, unix.EPERM) {
		t.Errorf("marked send: %v, want EPERM", sendErr)
	}
	waitNone(t, u, "a datagram with the agent's mark from nobody")
}

// Under an allow list a TLS or HTTP start is judged on the name a server
// reads there (an SNI with a trailing dot is that name), and one whose
// name the forwarder cannot read is refused, never judged on its address
// (resolved from an allowed name).
func TestEngineRefusesNamesItCannotRead(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	e := startEngine(t, w.Lab, w.Container, nil)
	d := socksDoc(1)
	d.Allow = []string{"allowed.test"}
	e.apply(d)
	// The agent's resolver answers allowed.test with the target's
	// address, so a connection there without a name would pass.
	w.get(t, w.web, "http://allowed.test/")

	// Dante logs a relayed connection twice, when it opens ("[") and when
	// it closes ("]"); only the opening line is sure to be there once the
	// client has its answer.
	reached := func(port string) int {
		return len(netlab.Lines(w.dante.Log(), "tcp/connect [", netlab.TargetAddr+"."+port))
	}
	send := func(port string, b []byte) {
		t.Helper()
		c, err := w.DialContext(w.Container)(context.Background(), "tcp", net.JoinHostPort(netlab.TargetAddr, port))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.Copy(io.Discard, c)
	}
	for _, c := range []struct {
		name, port string
		b          []byte
	}{
		{"SNI with a trailing dot", "443", clientHello(t, "evil.test.")},
		{"two Host headers, the denied one first", "80", []byte("GET / HTTP/1.1\r\nHost: evil.test\r\nHost: allowed.test\r\n\r\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, hits := reached(c.port), len(w.web.Hits())+len(w.web2.Hits())
			send(c.port, c.b)
			if n := reached(c.port) - before; n != 0 || len(w.web.Hits())+len(w.web2.Hits()) != hits {
				t.Fatalf("the connection went out (%d through the proxy):\n%s", n, w.dante.Log())
			}
		})
	}
	if !journalHas(e, "egress denied", map[string]string{"reason": "name evil.test not on the allow list", "destination": netlab.TargetAddr + ":443"}) ||
		!journalHas(e, "egress denied", map[string]string{"reason": "http start whose name cannot be read"}) {
		t.Fatalf("journal lacks the refusals:\n%s", e.proc.Output())
	}
	// An allowed name with a trailing dot is that name: it passes.
	before := reached("443")
	send("443", clientHello(t, "allowed.test."))
	if reached("443") != before+1 {
		t.Fatalf("allowed.test. did not go out through the proxy:\n%s", w.dante.Log())
	}
}
