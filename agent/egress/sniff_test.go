package egress_test

import (
	"bytes"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"deckhand/agent/egress"
)

// sniffOf runs client against one end of a TCP pair and sniffs the other.
func sniffOf(t *testing.T, client func(c net.Conn)) egress.Hello {
	t.Helper()
	return sniffOfWait(t, 5*time.Second, client)
}

func sniffOfWait(t *testing.T, wait time.Duration, client func(c net.Conn)) egress.Hello {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		client(c)
		time.Sleep(wait + 50*time.Millisecond)
	}()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return egress.Sniff(s, wait)
}

func TestSniffFindsTheName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, kind, want string
		client           func(net.Conn)
	}{
		{"TLS SNI", "tls", "api.example.com", func(c net.Conn) {
			_ = tls.Client(c, &tls.Config{ServerName: "API.Example.com", InsecureSkipVerify: true}).Handshake()
		}},
		{"TLS without SNI (IP literal)", "tls", "", func(c net.Conn) {
			_ = tls.Client(c, &tls.Config{ServerName: "192.0.2.1", InsecureSkipVerify: true}).Handshake()
		}},
		{"HTTP Host with port", "http", "www.example.org", func(c net.Conn) {
			_, _ = c.Write([]byte("GET /x HTTP/1.1\r\nHost: www.example.org:8080\r\nUser-Agent: t\r\n\r\n"))
		}},
		{"HTTP head in pieces", "http", "a.example", func(c net.Conn) {
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHo"))
			time.Sleep(20 * time.Millisecond)
			_, _ = c.Write([]byte("st: a.example\r\n\r\n"))
		}},
		{"other protocol", "", "", func(c net.Conn) { _, _ = c.Write([]byte{0x00, 0x01, 0x02}) }},
		{"client-first text protocol", "", "", func(c net.Conn) { _, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n")) }},
		{"TLS SNI with a trailing dot", "tls", "evil.test", func(c net.Conn) {
			_, _ = c.Write(clientHello(t, "evil.test."))
		}},
		{"HTTP Host with a trailing dot", "http", "evil.test", func(c net.Conn) {
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: evil.test.\r\n\r\n"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := sniffOf(t, c.client)
			if h.Kind != c.kind || h.Name != c.want {
				t.Fatalf("kind %q name %q, want %q %q", h.Kind, h.Name, c.kind, c.want)
			}
			if len(h.Raw) == 0 {
				t.Fatal("the bytes read were not kept to pass on")
			}
		})
	}
	// The bytes are kept exactly as sent.
	req := "GET / HTTP/1.1\r\nHost: k.example\r\n\r\n"
	if h := sniffOf(t, func(c net.Conn) { _, _ = c.Write([]byte(req)) }); string(h.Raw) != req {
		t.Fatalf("raw %q", h.Raw)
	}
	// A server-first protocol: nothing arrives, the wait ends.
	h := sniffOf(t, func(c net.Conn) { time.Sleep(300 * time.Millisecond) })
	if h.Kind != "" || h.Name != "" {
		t.Fatalf("%+v", h)
	}
}

// clientHello is a ClientHello as crypto/tls writes it, its SNI then
// replaced by name (same length budget: the lengths are rewritten).
func clientHello(t *testing.T, name string) []byte {
	t.Helper()
	const stand = "sni-placeholder-for-the-test.example"
	var out []byte
	a, b := net.Pipe()
	go func() {
		_ = tls.Client(a, &tls.Config{ServerName: stand, InsecureSkipVerify: true}).Handshake()
	}()
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	n, err := b.Read(buf)
	a.Close()
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	out = buf[:n]
	i := bytes.Index(out, []byte(stand))
	if i < 0 {
		t.Fatal("no SNI in the hello")
	}
	d := len(name) - len(stand)
	out = append(append(append([]byte(nil), out[:i]...), name...), out[i+len(stand):]...)
	// Lengths that enclose the name: record, handshake, extensions,
	// server_name extension, its list, the host name.
	add := func(at, size int) {
		v := 0
		for k := 0; k < size; k++ {
			v = v<<8 | int(out[at+k])
		}
		v += d
		for k := size - 1; k >= 0; k-- {
			out[at+k] = byte(v)
			v >>= 8
		}
	}
	add(3, 2)
	add(6, 3)
	add(i-2, 2) // host name
	add(i-5, 2) // server name list
	add(i-7, 2) // extension data
	// The extensions block's length follows the compression methods.
	p := 5 + 4 + 2 + 32
	p += 1 + int(out[p])
	p += 2 + (int(out[p])<<8 | int(out[p+1]))
	p += 1 + int(out[p])
	add(p, 2)
	return out
}

func TestSniffRefusesWhatCannotBeRead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, kind string
		client     func(net.Conn)
	}{
		{"TLS hello cut short", "tls", func(c net.Conn) {
			h := clientHello(t, "allowed.test")
			_, _ = c.Write(h[:len(h)/2])
		}},
		{"TLS SNI that is no host name", "tls", func(c net.Conn) { _, _ = c.Write(clientHello(t, "evil test")) }},
		{"two Host headers", "http", func(c net.Conn) {
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: evil.test\r\nHost: allowed.test\r\n\r\n"))
		}},
		{"absolute target and another Host", "http", func(c net.Conn) {
			_, _ = c.Write([]byte("GET http://evil.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n"))
		}},
		{"HTTP/1.1 without Host", "http", func(c net.Conn) { _, _ = c.Write([]byte("GET / HTTP/1.1\r\n\r\n")) }},
		{"Host that is no host name", "http", func(c net.Conn) {
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: evil/test\r\n\r\n"))
		}},
		{"request head cut short", "http", func(c net.Conn) { _, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: evi")) }},
		{"request line cut short", "http", func(c net.Conn) { _, _ = c.Write([]byte("GET /ind")) }},
		{"HTTP/2 prior knowledge", "http", func(c net.Conn) { _, _ = c.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := sniffOfWait(t, 300*time.Millisecond, c.client)
			if !h.Unreadable || h.Kind != c.kind || h.Name != "" {
				t.Fatalf("%+v, want an unreadable %s start", h, c.kind)
			}
		})
	}
}
