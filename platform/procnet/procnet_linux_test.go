package procnet_test

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"deckhand/platform/procnet"
)

func addrPort(a net.Addr) netip.AddrPort { return a.(*net.TCPAddr).AddrPort() }

func listen(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("%s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// TestOwnerOfThisProcesssConnection: over IPv4 and IPv6 loopback, the
// connecting socket's owner is this process's user.
func TestOwnerOfThisProcesssConnection(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ network, addr string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}, {"tcp", "[::]:0"}} {
		ln := listen(t, c.network, c.addr)
		port := ln.Addr().(*net.TCPAddr).Port
		target := "127.0.0.1:" + strconv.Itoa(port)
		if c.network == "tcp6" {
			target = "[::1]:" + strconv.Itoa(port)
		}
		cl, err := net.Dial("tcp", target)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		uid, ok, err := procnet.Owner(addrPort(srv.RemoteAddr()), addrPort(srv.LocalAddr()))
		if err != nil || !ok || uid != uint32(os.Geteuid()) {
			t.Errorf("%s: owner %d %v %v, want %d", c.addr, uid, ok, err, os.Geteuid())
		}
		ls, err := procnet.Listening()
		found := false
		for _, s := range ls {
			found = found || s.Local.Port() == uint16(port)
		}
		if err != nil || !found {
			t.Errorf("%s: listener not listed (%v)", c.addr, err)
		}
		_ = cl.Close()
		_ = srv.Close()
	}
}

// TestOwnerOfAnotherUsersConnection: a connection opened by a process of
// another user (bash's /dev/tcp as nobody) is that user's; once that
// process has closed its socket, the connection names no owner at all
// (the kernel would report uid 0 for it).
func TestOwnerOfAnotherUsersConnection(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process as another user")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	ln := listen(t, "tcp4", "127.0.0.1:0")
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// Connect, say hello, wait for one line back, then close.
	cmd := exec.Command(bash, "-c", `exec 3<>/dev/tcp/127.0.0.1/`+port+` && echo hello >&3 && read -r line <&3`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	br := bufio.NewReader(srv)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	peer, local := addrPort(srv.RemoteAddr()), addrPort(srv.LocalAddr())
	if uid, ok, err := procnet.Owner(peer, local); err != nil || !ok || uid != 65534 {
		t.Fatalf("owner %d %v %v, want 65534", uid, ok, err)
	}
	if _, err := srv.Write([]byte("bye\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(br); err != nil { // the client closed
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if uid, ok, err := procnet.Owner(peer, local); err != nil || ok {
		t.Fatalf("a closed socket has an owner: %d %v %v", uid, ok, err)
	}
}

func TestParseAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"0100007F:0016":                         "127.0.0.1:22",
		"00000000:1F90":                         "0.0.0.0:8080",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"0000000000000000FFFF00000100007F:1E61": "127.0.0.1:7777",
		"00000000000000000000000000000000:0016": "[::]:22",
	} {
		got, err := procnet.ParseAddr(in)
		if err != nil || got.String() != want {
			t.Errorf("%s: %v %v, want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:XYZ", "01007F:0016", "zz00007F:0016"} {
		if _, err := procnet.ParseAddr(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestOwnerDiagAgreesWithTheTable: the sock_diag lookup and the table
// scan find the same owner for a live connection and none for one that
// does not exist.
func TestOwnerDiagAgreesWithTheTable(t *testing.T) {
	t.Parallel()
	ln := listen(t, "tcp4", "127.0.0.1:0")
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	peer, local := addrPort(srv.RemoteAddr()), addrPort(srv.LocalAddr())
	u1, ok1, err1 := procnet.OwnerDiag(peer, local)
	u2, ok2, err2 := procnet.OwnerScan(peer, local)
	if err1 != nil || err2 != nil || !ok1 || !ok2 || u1 != u2 {
		t.Fatalf("diag %d %v %v, table %d %v %v", u1, ok1, err1, u2, ok2, err2)
	}
	gone := netip.AddrPortFrom(peer.Addr(), 1)
	if _, ok, err := procnet.OwnerDiag(gone, local); ok || err != nil {
		t.Fatalf("diag found a socket that does not exist: %v %v", ok, err)
	}
}
