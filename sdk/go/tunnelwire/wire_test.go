package tunnelwire_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gorilla/websocket"

	wire "github.com/deckhand-dev/deckhand/sdk/go/tunnelwire"
)

// opaque hides *net.TCPConn, so the bridge copies instead of splicing.
type opaque struct{ *net.TCPConn }

func (o opaque) CloseWrite() error { return o.TCPConn.CloseWrite() }

// service starts the container end: each WebSocket is bridged to a new
// connection to target (wrapped when copied is set).
func service(t *testing.T, target string, copied bool, ended chan<- error) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		var conn net.Conn = c
		if copied {
			conn = opaque{c.(*net.TCPConn)}
		}
		ended <- wire.Bridge(wire.Server(gws.NetConn(), nil), conn, time.Minute, wire.Counters{})
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// listen accepts one connection and hands it to fn.
func listen(t *testing.T, fn func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err == nil {
			fn(c)
		}
	}()
	return ln.Addr().String()
}

// Bytes arrive whole and in order both ways, spliced or copied, through
// half-closes in each direction ("send, half-close, read the answer"),
// and both bridges end cleanly.
func TestBridgeBothWaysThroughHalfClose(t *testing.T) {
	t.Parallel()
	for _, copied := range []bool{false, true} {
		name := map[bool]string{false: "spliced", true: "copied"}[copied]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			up := make([]byte, 5<<20+17)
			down := make([]byte, 3<<20+5)
			_, _ = rand.Read(up)
			_, _ = rand.Read(down)
			gotUp := make(chan [32]byte, 1)
			app := listen(t, func(c net.Conn) { // the server in the container
				defer c.Close()
				h := sha256.New()
				_, _ = io.Copy(h, c) // to the client's half-close
				var sum [32]byte
				copy(sum[:], h.Sum(nil))
				gotUp <- sum
				_, _ = c.Write(down)
			})
			svcEnded := make(chan error, 1)
			url := service(t, app, copied, svcEnded)
			cliEnded := make(chan error, 1)
			local := listen(t, func(c net.Conn) { // the client's accepted connection
				ws, err := wire.Dialer{}.Dial(context.Background(), url)
				if err != nil {
					cliEnded <- err
					c.Close()
					return
				}
				var conn net.Conn = c
				if copied {
					conn = opaque{c.(*net.TCPConn)}
				}
				cliEnded <- wire.Bridge(ws, conn, time.Minute, wire.Counters{})
			})
			user, err := net.Dial("tcp", local)
			if err != nil {
				t.Fatal(err)
			}
			defer user.Close()
			if _, err := user.Write(up); err != nil {
				t.Fatal(err)
			}
			_ = user.(*net.TCPConn).CloseWrite()
			answer, err := io.ReadAll(user)
			if err != nil {
				t.Fatal(err)
			}
			if sum := <-gotUp; sum != sha256.Sum256(up) {
				t.Fatal("the app got other bytes than the user sent")
			}
			if !bytes.Equal(answer, down) {
				t.Fatalf("the user got %d bytes, not the app's %d", len(answer), len(down))
			}
			for name, ch := range map[string]chan error{"service": svcEnded, "client": cliEnded} {
				select {
				case err := <-ch:
					if err != nil {
						t.Errorf("%s bridge: %v", name, err)
					}
				case <-time.After(5 * time.Second):
					t.Errorf("%s bridge did not end", name)
				}
			}
		})
	}
}

// rawClient does a WebSocket handshake by hand and returns the socket.
func rawClient(t *testing.T, url string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, br, _, err := ws.Dial(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if br == nil {
		br = bufio.NewReader(c)
	}
	return c, br
}

// readClose reads frames until a close frame and returns its code.
func readClose(t *testing.T, c net.Conn, br *bufio.Reader) ws.StatusCode {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := ws.ReadFrame(br)
		if err != nil {
			t.Fatalf("no close frame: %v", err)
		}
		if f.Header.OpCode == ws.OpClose {
			code, _ := ws.ParseCloseFrameData(f.Payload)
			return code
		}
	}
}

// RFC 6455 5.1: a server closes on an unmasked frame (1002); reserved bits
// with no extension agreed are refused too.
func TestServerRefusesBadFrames(t *testing.T) {
	t.Parallel()
	app := listen(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	cases := []struct {
		name  string
		frame ws.Frame
	}{
		{"unmasked binary", ws.NewBinaryFrame([]byte("hi"))},
		{"reserved bit", func() ws.Frame {
			f := ws.MaskFrame(ws.NewBinaryFrame([]byte("hi")))
			f.Header.Rsv = ws.Rsv(true, false, false)
			return f
		}()},
		{"long ping", ws.MaskFrame(ws.NewPingFrame(make([]byte, 126)))},
	}
	for _, tc := range cases {
		ended := make(chan error, 1)
		url := service(t, app, false, ended)
		c, br := rawClient(t, url)
		if err := ws.WriteFrame(c, tc.frame); err != nil {
			t.Fatal(err)
		}
		if code := readClose(t, c, br); code != ws.StatusProtocolError {
			t.Errorf("%s: closed with %d, want 1002", tc.name, code)
		}
		if err := <-ended; err == nil {
			t.Errorf("%s: the bridge reported a clean end", tc.name)
		}
	}
}

// A server may send frames in the same packet as its 101 answer: the
// client reads them from what the handshake buffered, then the socket.
func TestClientKeepsBytesAfterHandshake(t *testing.T) {
	t.Parallel()
	var frames bytes.Buffer
	_ = ws.WriteFrame(&frames, ws.NewBinaryFrame([]byte("banner\n")))
	_ = ws.WriteFrame(&frames, ws.NewTextFrame([]byte(`{"type":"close_write"}`)))
	srv := listen(t, func(c net.Conn) {
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		sum := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(sum[:])+"\r\n\r\n"+frames.String())
		_, _ = io.Copy(io.Discard, c)
	})
	ws, err := wire.Dialer{}.Dial(context.Background(), "ws://"+srv+"/")
	if err != nil {
		t.Fatal(err)
	}
	local := listen(t, func(c net.Conn) { _ = wire.Bridge(ws, c, time.Minute, wire.Counters{}) })
	user, err := net.Dial("tcp", local)
	if err != nil {
		t.Fatal(err)
	}
	defer user.Close()
	_ = user.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(user) // ends at the server's close_write
	if err != nil || string(got) != "banner\n" {
		t.Fatalf("got %q, %v; want the banner, then end of stream", got, err)
	}
}

// A peer that answers nothing is cut after two ping intervals; the client
// answers the server's pings.
func TestSilentPeerIsCut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		time.Sleep(2 * time.Second) // reads nothing, answers nothing
		gws.Close()
	}))
	t.Cleanup(srv.Close)
	ws, err := wire.Dialer{}.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer b.Close()
	start := time.Now()
	err = wire.Bridge(ws, a, 100*time.Millisecond, wire.Counters{})
	if err == nil || time.Since(start) > time.Second {
		t.Fatalf("bridge ended after %v with %v; want a timeout after about 200 ms", time.Since(start), err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err %v is not a timeout", err)
	}

	// And a gorilla server that pings sees its pongs.
	pongs := make(chan struct{}, 1)
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer gws.Close()
		gws.SetPongHandler(func(string) error { pongs <- struct{}{}; return nil })
		_ = gws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second))
		_, _, _ = gws.ReadMessage()
	}))
	t.Cleanup(srv2.Close)
	ws2, err := wire.Dialer{}.Dial(context.Background(), "ws"+strings.TrimPrefix(srv2.URL, "http"))
	if err != nil {
		t.Fatal(err)
	}
	c, d := net.Pipe()
	defer d.Close()
	go func() { _ = wire.Bridge(ws2, c, time.Minute, wire.Counters{}) }()
	select {
	case <-pongs:
	case <-time.After(5 * time.Second):
		t.Fatal("no pong")
	}
}

// A refused handshake is the service's answer, status and body.
func TestDialRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, `{"code":"UPSTREAM_UNREACHABLE","message":"nothing listens on port 9"}`)
	}))
	t.Cleanup(srv.Close)
	_, err := wire.Dialer{}.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"))
	he, ok := errors.AsType[*wire.HandshakeError](err)
	if !ok || he.Status != http.StatusBadGateway || !strings.Contains(string(he.Body), "UPSTREAM_UNREACHABLE") {
		t.Fatalf("err %v", err)
	}
}

// Through an HTTP proxy (a stand-in for a corporate one): CONNECT to the
// service with the proxy's credentials, then the tunnel as usual.
func TestDialThroughProxy(t *testing.T) {
	t.Parallel()
	app := listen(t, func(c net.Conn) { // echoes one line
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		_, _ = io.WriteString(c, "echo "+line)
	})
	ended := make(chan error, 1)
	url := service(t, app, false, ended)
	connects := make(chan string, 1)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		if r.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("ann:s3cret")) {
			w.WriteHeader(http.StatusProxyAuthRequired)
			return
		}
		up, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		connects <- r.Host
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		_, _ = io.Copy(c, up)
		c.Close()
	}))
	t.Cleanup(proxy.Close)
	pu, _ := neturl.Parse(proxy.URL)
	pu.User = neturl.UserPassword("ann", "s3cret")
	ws, err := wire.Dialer{Proxy: http.ProxyURL(pu)}.Dial(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-connects:
		if want := strings.TrimPrefix(url, "ws://"); got != want {
			t.Fatalf("the proxy was asked for %q, want %q", got, want)
		}
	default:
		t.Fatal("the tunnel did not go through the proxy")
	}
	local := listen(t, func(c net.Conn) { _ = wire.Bridge(ws, c, time.Minute, wire.Counters{}) })
	user, err := net.Dial("tcp", local)
	if err != nil {
		t.Fatal(err)
	}
	defer user.Close()
	_ = user.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(user, "hi\n")
	got, err := io.ReadAll(user)
	if err != nil || string(got) != "echo hi\n" {
		t.Fatalf("through the proxy: %q %v", got, err)
	}

	// Wrong proxy credentials: the proxy's refusal, not a hang.
	pu.User = neturl.UserPassword("ann", "wrong")
	if _, err := (wire.Dialer{Proxy: http.ProxyURL(pu)}).Dial(context.Background(), url); err == nil || !strings.Contains(err.Error(), "407") {
		t.Fatalf("wrong proxy password: %v", err)
	}
}
